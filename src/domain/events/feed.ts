import { and, asc, eq, gt, gte, lte, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { literal, type Page, type PageRequest } from "../../db/pages";
import { type EventRow, eventSequences, events } from "../../db/schema";
import { decodeSequenceCursor, encodeSequenceCursor } from "../../lib/cursor";
import { DomainError } from "../../lib/errors";
import { EVENT_TYPE_NAMES, type EventType } from "./catalog";
import { firstOfEachType, ofTypes, retentionCutoff } from "./log";

export interface FeedFilters {
  /** The types the caller may read: no other is ever shown. */
  readable: readonly EventType[];
  type?: EventType;
  /** Only events whose sequence is above this. */
  afterSequence: number;
}

export interface FeedPage extends Page<EventRow> {
  /** The newest sequence the caller may be shown when the page was read (`visibleLast`); nothing past it is shown. */
  lastSequence: number;
}

const readsEveryType = (readable: readonly EventType[]) => readable.length === EVENT_TYPE_NAMES.length;

/**
 * The newest sequence a caller may be shown, `last` being the agency's latest. A caller who
 * may read every type is shown `last`; any other, the newest kept event of the types it may
 * read, and never less than `floor` (the position it reads from), so that what it is shown
 * says nothing of the events it may not read (not even how many there were). One look-up on
 * `events_agency_type_sequence` per readable type.
 */
export async function visibleLast(
  db: Db,
  agencyId: string,
  readable: readonly EventType[],
  last: number,
  floor = 0,
): Promise<number> {
  if (readsEveryType(readable)) return last;
  if (!readable.length) return floor;
  const newest = readable.map(
    (t) => sql`coalesce((SELECT max(${events.sequence}) FROM ${events} INDEXED BY events_agency_type_sequence
      WHERE ${events.agencyId} = ${agencyId} AND ${events.eventType} = ${literal(t)}
      AND ${events.sequence} <= ${last}), 0)`,
  );
  const [row] = await db.all<{ newest: number }>(sql`SELECT max(${sql.join(newest, sql`, `)}, 0) AS newest`);
  return Math.max(row?.newest ?? 0, floor);
}

/** The agency's latest sequence number; 0 before its first event. */
export async function lastSequence(db: Db, agencyId: string): Promise<number> {
  const row = await db
    .select({ last: eventSequences.last })
    .from(eventSequences)
    .where(eq(eventSequences.agencyId, agencyId))
    .get();
  return row?.last ?? 0;
}

/**
 * The agency's events after a sequence number, in sequence order, of the types the caller
 * may read, up to the agency's latest sequence at read time. The feed continues only while
 * the event right after the position is still kept (one look-up on the unique index); once
 * it is past the retention window, or swept, the answer is 410 `event_sequence_expired`.
 * A cursor carries the last sequence shown and is bound to the agency, type and
 * `afterSequence` it was minted for.
 */
export async function pageFeed(
  db: Db,
  agencyId: string,
  filters: FeedFilters,
  req: PageRequest,
  now = Date.now(),
): Promise<FeedPage> {
  const { readable, type, afterSequence } = filters;
  const list = `event-feed:${agencyId}:${type ?? ""}:${afterSequence}`;
  const from = (await decodeSequenceCursor(req.keyring, list, req.cursor)) ?? afterSequence;
  const cutoff = retentionCutoff(now);
  const [bounds] = await db.all<{ last: number; kept: number }>(sql`SELECT
    coalesce((SELECT ${eventSequences.last} FROM ${eventSequences}
      WHERE ${eventSequences.agencyId} = ${agencyId}), 0) AS last,
    EXISTS (SELECT 1 FROM ${events} WHERE ${events.agencyId} = ${agencyId} AND ${events.sequence} = ${from + 1}
      AND ${events.createdAt} >= ${cutoff}) AS kept`);
  const last = bounds?.last ?? 0;
  const shown = () => visibleLast(db, agencyId, readable, last, from);
  if (from >= last) return { rows: [], nextCursor: "", lastSequence: await shown() };
  if (!bounds?.kept) throw await expired(db, agencyId, readable, from, await shown(), cutoff);
  const [rows, lastShown] = await Promise.all([
    feedRows(db, agencyId, { readable, type }, from, last, req.limit + 1),
    shown(),
  ]);
  const more = rows.length > req.limit;
  const page = more ? rows.slice(0, req.limit) : rows;
  const end = page[page.length - 1]?.sequence;
  const nextCursor = more && end != null ? await encodeSequenceCursor(req.keyring, list, end) : "";
  return { rows: page, nextCursor, lastSequence: lastShown };
}

/**
 * The agency's events numbered in (from, last], of the readable types (of `type` alone when
 * given), in sequence order. A caller who may read every type walks `events_agency_sequence`
 * from the position; one type, or a caller who may read only some types, gets the first
 * `limit` of each of those types after the position (`firstOfEachType`), merged. Filtering
 * the agency's walk by type instead would read every event of the types the caller may not
 * see before the page fills.
 */
export function feedRows(
  db: Db,
  agencyId: string,
  filters: Pick<FeedFilters, "readable" | "type">,
  from: number,
  last: number,
  limit: number,
) {
  const { readable, type } = filters;
  const types = type ? readable.filter((t) => t === type) : readable;
  const inRange = and(eq(events.agencyId, agencyId), gt(events.sequence, from), lte(events.sequence, last));
  const where = readsEveryType(types)
    ? and(inRange, ofTypes(types))
    : firstOfEachType(types, "events_agency_type_sequence", inRange, sql`${events.sequence}`, limit);
  return db.select().from(events).where(where).orderBy(asc(events.sequence)).limit(limit);
}

/**
 * 410 for a position whose next event is no longer kept, naming the oldest sequence still
 * kept after it, of the types the caller may read (`last` + 1 when none is), and `last`, the
 * newest it may be shown. This walks the sequence index from the position to the first such
 * kept event, past rows the nightly sweep has not reached yet; it runs only when the feed has expired.
 */
async function expired(
  db: Db,
  agencyId: string,
  readable: readonly EventType[],
  from: number,
  last: number,
  cutoff: string,
) {
  const after = and(eq(events.agencyId, agencyId), gt(events.sequence, from), gte(events.createdAt, cutoff));
  const oldest = await db
    .select({ sequence: events.sequence })
    .from(events)
    .where(readsEveryType(readable) ? after : and(after, ofTypes(readable)))
    .orderBy(asc(events.sequence))
    .limit(1)
    .get();
  return new DomainError("event_sequence_expired", {
    details: { after_sequence: from, oldest_sequence: oldest?.sequence ?? last + 1, last_sequence: last },
  });
}
