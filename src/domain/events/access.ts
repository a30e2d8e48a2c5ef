import { DomainError } from "../../lib/errors";
import type { Scope } from "../roles";
import { EVENT_TYPE_NAMES, EVENT_TYPES, type EventType } from "./catalog";

export type EventCategory = (typeof EVENT_TYPES)[EventType]["category"];

/**
 * The read scope that guards each category's data on its own routes: an event tells what
 * those routes show, so reading or subscribing to it needs the same scope. Media
 * deliveries are of a listing's media; appointments are shoots on the agency's calendar.
 */
export const READ_SCOPE: Record<EventCategory, Scope> = {
  Appointment: "scheduling:read",
  Billing: "orders:read",
  Listing: "listings:read",
  Media: "listings:read",
  User: "users:read",
};

export const readScopeOf = (type: EventType): Scope => READ_SCOPE[EVENT_TYPES[type].category];

/** The event types a caller with `scopes` may read, in catalog order. */
export const readableEventTypes = (scopes: ReadonlySet<Scope>): EventType[] =>
  EVENT_TYPE_NAMES.filter((type) => scopes.has(readScopeOf(type)));

/**
 * Refuses (403 `auth.scope_denied`) event types whose read scope the caller lacks, naming
 * the missing scopes and the types they would open; `required_scope` is the first of them,
 * as on any route.
 */
export function checkEventTypesReadable(scopes: ReadonlySet<Scope>, types: readonly EventType[]): void {
  const denied = types.filter((type) => !scopes.has(readScopeOf(type)));
  if (!denied.length) return;
  const missing = [...new Set(denied.map(readScopeOf))];
  throw new DomainError("auth.scope_denied", {
    message:
      `The API key may not read ${denied.length === 1 ? `'${denied[0]}'` : `${denied.length} of these event types`}: ` +
      `it lacks ${missing.map((s) => `'${s}'`).join(", ")}.`,
    details: { required_scope: missing[0], missing_scopes: missing, event_types: denied },
  });
}
