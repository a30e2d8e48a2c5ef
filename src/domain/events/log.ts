import { and, eq, gte, inArray, lt, type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { keysetPage, literal, type PageRequest, unionOfIds } from "../../db/pages";
import { type EventRow, events } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";
import { EVENT_TYPE_NAMES, type EventType } from "./catalog";

/** How long events, and the webhook deliveries of them, are kept. */
export const EVENT_RETENTION_DAYS = 30;

/** The oldest `created_at` still kept at `now`: older rows are hidden at once and swept at night. */
export const retentionCutoff = (now = Date.now()) => nowIso(now - EVENT_RETENTION_DAYS * 24 * 3600 * 1000);

export interface EventFilters {
  /** The types the caller may read: no other is ever shown. */
  readable: readonly EventType[];
  type?: EventType;
  /** ISO 8601 instant, inclusive. */
  createdAfter?: string;
  /** ISO 8601 instant, exclusive. */
  createdBefore?: string;
}

/** An ISO 8601 instant (checked by the route's query schema) as the stored form, UTC with milliseconds. */
const instant = (value: string | undefined) => (value === undefined ? undefined : nowIso(Date.parse(value)));

/** The time window of a list, as it compares with `created_at` as text. */
export const eventWindow = (createdAfter: string | undefined, createdBefore: string | undefined) => ({
  createdAfter: instant(createdAfter),
  createdBefore: instant(createdBefore),
});

/** Events of these (public) types only; the list travels as one bound parameter. */
export const ofTypes = (types: readonly EventType[]): SQL =>
  inArray(events.eventType, sql`(SELECT value FROM json_each(${JSON.stringify(types)}))`);

/**
 * The events that are, for each of `types`, among the first `limit` of that type matching
 * `where` in `order`, each type read from `index` (led by agency and type): a page's worth
 * of each type, however many events of other types lie between. Each part holds the page to
 * `where`'s agency (ids are unique across agencies), so the outer query reads the rows by id
 * alone; naming the agency there too makes SQLite walk the agency's index again. Without
 * statistics SQLite prefers other indexes, so each part names its own.
 */
export function firstOfEachType(
  types: readonly EventType[],
  index: "events_agency_type_sequence" | "events_agency_type_page",
  where: SQL | undefined,
  order: SQL,
  limit: number,
): SQL {
  if (!types.length) return sql`0`;
  return inArray(
    events.id,
    unionOfIds(
      types.map(
        (t) => sql`SELECT id FROM (SELECT ${events.id} FROM ${events} INDEXED BY ${sql.raw(index)}
          WHERE ${and(where, sql`${events.eventType} = ${literal(t)}`)} ORDER BY ${order} LIMIT ${literal(limit)})`,
      ),
    ),
  );
}

/**
 * The agency's events still kept, oldest first, of the given types and inside a time
 * window. The retention horizon is a floor under `created_after`; it moves with the
 * clock, so it is not part of the list a cursor is bound to. Neither are the types a
 * caller may read: they are in the statement, so a cursor never shows more than they allow.
 *
 * A caller who may read only some types, asking for no one type, gets the first page's
 * worth of each of those types (`firstOfEachType`), merged: walking the agency's events and
 * filtering them would read every event of the types it may not see before the page fills.
 */
export function pageEvents(db: Db, agencyId: string, filters: EventFilters, req: PageRequest, now = Date.now()) {
  const { readable, type, createdAfter, createdBefore } = filters;
  const cutoff = retentionCutoff(now);
  const from = createdAfter !== undefined && createdAfter > cutoff ? createdAfter : cutoff;
  const inWindow = and(
    eq(events.agencyId, agencyId),
    gte(events.createdAt, from),
    createdBefore !== undefined ? lt(events.createdAt, createdBefore) : undefined,
  );
  const list = `events:${agencyId}:${type ?? ""}:${createdAfter ?? ""}:${createdBefore ?? ""}`;
  if (type || readable.length === EVENT_TYPE_NAMES.length)
    return keysetPage(
      db,
      events,
      list,
      and(inWindow, ofTypes(readable), type ? eq(events.eventType, type) : undefined),
      req,
    );
  const order = sql`${events.createdAt}, ${events.id}`;
  return keysetPage(
    db,
    events,
    list,
    (after) => firstOfEachType(readable, "events_agency_type_page", and(inWindow, after), order, req.limit + 1),
    req,
  );
}

/** One event of the agency, still kept; another agency's, an expired or an unknown one is `event_not_found`. */
export async function findEvent(db: Db, agencyId: string, id: string, now = Date.now()): Promise<EventRow> {
  const event = await db
    .select()
    .from(events)
    .where(
      and(
        eq(events.id, id),
        eq(events.agencyId, agencyId),
        ofTypes(EVENT_TYPE_NAMES),
        gte(events.createdAt, retentionCutoff(now)),
      ),
    )
    .get();
  if (!event) throw new DomainError("event_not_found");
  return event;
}
