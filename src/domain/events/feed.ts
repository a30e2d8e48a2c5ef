import { and, asc, eq, gt, gte, lte, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import type { Page, PageRequest } from "../../db/pages";
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
  /** The agency's latest sequence when the page was read; the page shows nothing past it. */
  lastSequence: number;
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
  if (from >= last) return { rows: [], nextCursor: "", lastSequence: last };
  if (!bounds?.kept) throw await expired(db, agencyId, from, last, cutoff);
  const rows = await feedRows(db, agencyId, { readable, type }, from, last, req.limit + 1);
  const more = rows.length > req.limit;
  const page = more ? rows.slice(0, req.limit) : rows;
  const end = page[page.length - 1]?.sequence;
  const nextCursor = more && end != null ? await encodeSequenceCursor(req.keyring, list, end) : "";
  return { rows: page, nextCursor, lastSequence: last };
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
  const where =
    types.length === EVENT_TYPE_NAMES.length
      ? and(inRange, ofTypes(types))
      : firstOfEachType(types, "events_agency_type_sequence", inRange, sql`${events.sequence}`, limit);
  return db.select().from(events).where(where).orderBy(asc(events.sequence)).limit(limit);
}

/**
 * 410 for a position whose next event is no longer kept, naming the oldest sequence still
 * kept after it (the agency's next number when none is) and the latest one. This walks the
 * sequence index from the position to the first kept event, past rows the nightly sweep
 * has not reached yet; it runs only when the feed has expired.
 */
async function expired(db: Db, agencyId: string, from: number, last: number, cutoff: string) {
  const oldest = await db
    .select({ sequence: events.sequence })
    .from(events)
    .where(and(eq(events.agencyId, agencyId), gt(events.sequence, from), gte(events.createdAt, cutoff)))
    .orderBy(asc(events.sequence))
    .limit(1)
    .get();
  return new DomainError("event_sequence_expired", {
    details: { after_sequence: from, oldest_sequence: oldest?.sequence ?? last + 1, last_sequence: last },
  });
}
