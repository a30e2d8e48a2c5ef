import { z } from "zod";
import { DomainError } from "../../lib/errors";
import { EVENT_TYPE_NAMES, EVENT_TYPES, type EventType } from "./catalog";

/**
 * An endpoint's filters: conditions on an event's envelope, each a path into its `data`
 * (`data.status`) and the values it may hold there. An event is delivered to the endpoint
 * only when every filter holds; a field the event lacks counts as null.
 */
type FilterValue = string | number | boolean | null;
export interface EndpointFilter {
  path: string;
  in: FilterValue[];
}

/** Filters an endpoint may hold, values one filter may list, and the longest path. */
export const MAX_FILTERS = 10;
export const MAX_FILTER_VALUES = 50;
export const MAX_FILTER_PATH = 200;

/** The path's fields below the envelope's `data`; undefined for a path that does not start there. */
function dataFields(path: string): string[] | undefined {
  const [root, ...fields] = path.split(".");
  return root === "data" && fields.length > 0 && fields.every((f) => f.length > 0) ? fields : undefined;
}

/** The value at `fields` in `data`, null where a field is missing (own fields only). */
function valueAt(data: unknown, fields: string[]): unknown {
  let at = data;
  for (const field of fields) {
    if (at === null || typeof at !== "object" || Array.isArray(at) || !Object.hasOwn(at, field)) return null;
    at = (at as Record<string, unknown>)[field];
  }
  return at ?? null;
}

/** Whether an event's `data` meets every filter (no filters: every event). */
export function selects(filters: readonly EndpointFilter[] | null | undefined, data: unknown): boolean {
  if (!filters?.length) return true;
  return filters.every((f) => {
    const fields = dataFields(f.path);
    if (!fields) return false;
    const value = valueAt(data, fields);
    return f.in.some((allowed) => allowed === value);
  });
}

type JsonSchema = { properties?: Record<string, JsonSchema>; anyOf?: JsonSchema[]; oneOf?: JsonSchema[] };
const schemas = new Map<EventType, JsonSchema>();

/** Whether `fields` name a field of the event type's `data` (through nullable and union branches). */
function hasField(type: EventType, fields: string[]): boolean {
  let schema = schemas.get(type);
  if (!schema) {
    schema = z.toJSONSchema(EVENT_TYPES[type].data, { unrepresentable: "any" }) as JsonSchema;
    schemas.set(type, schema);
  }
  let level: JsonSchema[] = [schema];
  for (const field of fields) {
    const branches = level.flatMap((s) => [s, ...(s.anyOf ?? []), ...(s.oneOf ?? [])]);
    level = branches.flatMap((s) => (s.properties && Object.hasOwn(s.properties, field) ? [s.properties[field]!] : []));
    if (!level.length) return false;
  }
  return true;
}

/**
 * Checks filters against the event types an endpoint takes (null: every type): each path must
 * name a field of `data` that one of them carries, or the filter is 422 `webhook_filter_invalid`.
 */
export function checkFilters(filters: readonly EndpointFilter[], types: readonly EventType[] | null): void {
  const among = types ?? EVENT_TYPE_NAMES;
  for (const f of filters) {
    const fields = dataFields(f.path);
    if (!fields || !among.some((t) => hasField(t, fields)))
      throw new DomainError("webhook_filter_invalid", {
        message: `No event type of the endpoint has '${f.path}' in its payload_schema; a path reads data.<field>.`,
        details: { path: f.path, event_types: types },
      });
  }
}
