import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { keysetPage, type PageRequest } from "../../db/pages";
import { type WebhookEndpoint, webhookEndpoints } from "../../db/schema";
import { checkEventTypesReadable, readableEventTypes } from "../../domain/events/access";
import { EVENT_TYPE_NAMES, type EventType } from "../../domain/events/catalog";
import { checkFilters, type EndpointFilter } from "../../domain/events/filters";
import type { Scope } from "../../domain/roles";
import { seal, webhookSigningSecret } from "../../domain/sealed-columns";
import {
  checkVersion,
  type IfVersion,
  nextVersion,
  versionAccepted,
  versionIn,
  versionMismatch,
} from "../../domain/versions";
import { type KeyringSecrets, keyringOf } from "../../lib/crypto/keyring";
import { DomainError } from "../../lib/errors";
import { newId, nowIso } from "../../lib/ids";
import { checkOutboundUrl } from "../../lib/outbound-url";
import { newSigningSecret } from "../signing";

/** Active receivers an agency may register, as Stripe allows per account. */
export const MAX_ACTIVE_ENDPOINTS = 16;

/**
 * The agency id to store, or NULL once the agency has MAX_ACTIVE_ENDPOINTS active
 * receivers: the count and the insert are one statement, and the NOT NULL column makes a
 * registration past the cap fail with its whole batch (its idempotency mark included).
 */
const agencyUnderCap = (agencyId: string) =>
  sql`(CASE WHEN (SELECT count(*) FROM ${webhookEndpoints}
    WHERE ${webhookEndpoints.agencyId} = ${agencyId} AND ${webhookEndpoints.isActive} = 1) < ${MAX_ACTIVE_ENDPOINTS}
    THEN ${agencyId} END)`;

const isCapRefusal = (err: unknown): boolean => {
  for (let e: unknown = err, depth = 0; e && depth < 5; e = (e as { cause?: unknown }).cause, depth++)
    if (/NOT NULL constraint failed: webhook_endpoints\.agency_id/.test(e instanceof Error ? e.message : String(e)))
      return true;
  return false;
};

/** Internal event types that exist but are not part of the public contract. */
const DENIED_EVENT_TYPES = new Set([
  "api_key.created",
  "api_key.rotated",
  "api_key.revoked",
  "user.password_reset",
  "session.created",
  "listing.activated",
  "billing.credit_captured",
]);

function checkEventTypes(types: string[]): EventType[] {
  const known = new Set<string>(EVENT_TYPE_NAMES);
  const denied = types.filter((t) => DENIED_EVENT_TYPES.has(t));
  const unknown = types.filter((t) => !known.has(t) && !DENIED_EVENT_TYPES.has(t));
  if (denied.length || unknown.length) {
    const named = [
      ...unknown.map((t) => `'${t}' is not an event type`),
      ...denied.map((t) => `'${t}' cannot be subscribed to`),
    ];
    throw new DomainError("webhook_event_type_not_allowed", {
      message: `${named.join("; ")}.`,
      details: { unknown, denied },
    });
  }
  return [...new Set(types)] as EventType[];
}

/**
 * The types an endpoint registered by a caller with `scopes` subscribes to, stored as is:
 * a named type needs its read scope (403 `auth.scope_denied` otherwise), so a subscription
 * never carries more than the registering key could read. Omitted, the list is every
 * active type (null, types added later included) for a key that reads them all, else
 * the types the key reads as they stand now; a key that reads none is refused.
 */
function subscription(types: string[] | undefined, scopes: ReadonlySet<Scope>): EventType[] | null {
  if (types !== undefined) {
    const named = checkEventTypes(types);
    checkEventTypesReadable(scopes, named);
    return named;
  }
  const readable = readableEventTypes(scopes);
  if (readable.length === EVENT_TYPE_NAMES.length) return null;
  if (!readable.length) checkEventTypesReadable(scopes, EVENT_TYPE_NAMES);
  return readable;
}

export async function createEndpoint(
  db: Db,
  agencyId: string,
  env: KeyringSecrets & { ALLOW_HTTP_RECEIVERS: string },
  input: {
    url: string;
    eventTypes?: string[];
    description?: string;
    filters?: EndpointFilter[];
    payload?: "full" | "thin";
    scopes: ReadonlySet<Scope>;
  },
  alsoWrite: (endpoint: { id: string }) => BatchItem<"sqlite">[] = () => [],
): Promise<{ endpoint: WebhookEndpoint; secret: string }> {
  const verdict = checkOutboundUrl(input.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
  if (!verdict.ok)
    throw new DomainError("webhook_url_not_allowed", {
      message: `url ${verdict.reason}.`,
      details: { field: "url", reason: verdict.reason },
    });
  const eventTypes = subscription(input.eventTypes, input.scopes);
  if (input.filters) checkFilters(input.filters, eventTypes);
  const secret = newSigningSecret();
  const id = newId("we");
  const created = await db
    .batch([
      db
        .insert(webhookEndpoints)
        .values({
          id,
          agencyId: agencyUnderCap(agencyId),
          url: verdict.url,
          eventTypes,
          description: input.description ?? null,
          filters: input.filters?.length ? input.filters : null,
          payload: input.payload ?? "full",
          secretSealed: await seal(keyringOf(env), webhookSigningSecret, { agencyId, boundId: id }, secret),
        })
        .returning(),
      ...alsoWrite({ id }),
    ])
    .catch((err: unknown) => {
      if (!isCapRefusal(err)) throw err;
      throw new DomainError("webhook_endpoint_limit_reached", {
        message:
          `The agency already has ${MAX_ACTIVE_ENDPOINTS} active webhook endpoints; ` +
          "delete one to register another.",
        details: { limit: MAX_ACTIVE_ENDPOINTS },
      });
    });
  const [[endpoint]] = created;
  return { endpoint: endpoint!, secret };
}

export async function findEndpoint(db: Db, agencyId: string, id: string): Promise<WebhookEndpoint> {
  const endpoint = await db
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.agencyId, agencyId)))
    .get();
  if (!endpoint) throw new DomainError("webhook_endpoint_not_found");
  return endpoint;
}

/** The version of the agency's endpoint with this id, or undefined: one indexed read of one column. */
export async function endpointVersion(db: Db, agencyId: string, id: string): Promise<number | undefined> {
  const row = await db
    .select({ version: webhookEndpoints.version })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, id), eq(webhookEndpoints.agencyId, agencyId)))
    .get();
  return row?.version;
}

/**
 * Removes a receiver; one removed meanwhile (a concurrent delete) is
 * `webhook_endpoint_not_found`. `alsoWrite` follows the DELETE: a statement there
 * conditional on `changes()` runs only if this call removed it.
 */
export async function deleteEndpoint(
  db: Db,
  endpoint: WebhookEndpoint,
  alsoWrite: BatchItem<"sqlite">[] = [],
  ifVersion?: IfVersion,
): Promise<void> {
  checkVersion(endpoint.version, ifVersion);
  const [deleted] = await db.batch([
    db
      .delete(webhookEndpoints)
      .where(
        and(
          eq(webhookEndpoints.id, endpoint.id),
          eq(webhookEndpoints.agencyId, endpoint.agencyId),
          versionIn(webhookEndpoints.version, ifVersion),
        ),
      )
      .returning({ id: webhookEndpoints.id }),
    ...alsoWrite,
  ]);
  if (!deleted.length && ifVersion !== undefined) {
    const row = await db
      .select({ version: webhookEndpoints.version })
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.agencyId, endpoint.agencyId)))
      .get();
    if (row && !versionAccepted(row.version, ifVersion)) throw versionMismatch(ifVersion, row.version);
  }
  if (!deleted.length) throw new DomainError("webhook_endpoint_not_found");
}

/** What an update may change; a field left out keeps its value (`filters: null` clears them). */
export interface EndpointChange {
  url?: string;
  eventTypes?: string[] | null;
  description?: string | null;
  filters?: EndpointFilter[] | null;
  payload?: "full" | "thin";
}

/**
 * Changes a receiver in place, its secret and its deliveries kept. New event types need the
 * caller's read scopes, as on registration; filters are checked against the types the
 * endpoint takes after the change. An update that changes nothing keeps the version.
 */
export async function updateEndpoint(
  db: Db,
  endpoint: WebhookEndpoint,
  change: EndpointChange,
  env: { ALLOW_HTTP_RECEIVERS: string },
  scopes: ReadonlySet<Scope>,
  alsoWrite: BatchItem<"sqlite">[] = [],
  ifVersion?: IfVersion,
): Promise<WebhookEndpoint> {
  checkVersion(endpoint.version, ifVersion);
  let url = endpoint.url;
  if (change.url !== undefined) {
    const verdict = checkOutboundUrl(change.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
    if (!verdict.ok)
      throw new DomainError("webhook_url_not_allowed", {
        message: `url ${verdict.reason}.`,
        details: { field: "url", reason: verdict.reason },
      });
    url = verdict.url;
  }
  const eventTypes =
    change.eventTypes === undefined ? endpoint.eventTypes : subscription(change.eventTypes ?? undefined, scopes);
  const filters = change.filters === undefined ? endpoint.filters : change.filters?.length ? change.filters : null;
  if (filters) checkFilters(filters, (eventTypes as EventType[] | null) ?? null);
  const next = {
    url,
    eventTypes: eventTypes ?? null,
    description: change.description === undefined ? endpoint.description : change.description,
    filters,
    payload: change.payload ?? endpoint.payload,
  };
  const same = (Object.keys(next) as (keyof typeof next)[]).every(
    (k) => JSON.stringify(next[k]) === JSON.stringify(endpoint[k]),
  );
  const [updated] = await db.batch([
    db
      .update(webhookEndpoints)
      .set(
        same
          ? { version: endpoint.version }
          : { ...next, updatedAt: nowIso(), version: nextVersion(webhookEndpoints.version) },
      )
      .where(
        and(
          eq(webhookEndpoints.id, endpoint.id),
          eq(webhookEndpoints.agencyId, endpoint.agencyId),
          versionIn(webhookEndpoints.version, ifVersion),
        ),
      )
      .returning(),
    ...alsoWrite,
  ]);
  if (!updated[0]) {
    const now = await endpointVersion(db, endpoint.agencyId, endpoint.id);
    if (now !== undefined && ifVersion !== undefined && !versionAccepted(now, ifVersion))
      throw versionMismatch(ifVersion, now);
    throw new DomainError("webhook_endpoint_not_found");
  }
  return updated[0];
}

/** The agency's receivers, oldest first. */
export function pageEndpoints(db: Db, agencyId: string, req: PageRequest) {
  return keysetPage(
    db,
    webhookEndpoints,
    `webhook-endpoints:${agencyId}`,
    eq(webhookEndpoints.agencyId, agencyId),
    req,
  );
}
