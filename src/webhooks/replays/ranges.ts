import { and, asc, eq, gt, gte, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { events } from "../../db/schema";
import { lastSequence } from "../../domain/events/feed";
import { retentionCutoff } from "../../domain/events/log";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";

/** What a caller asks to replay: after a sequence (up to another), or a time window. */
export type ReplayRange = { afterSequence: number; untilSequence?: number } | { since: string; until?: string };

/** The sequences a replay covers, both ends included; empty when `from` > `to`. */
export interface Sequences {
  from: number;
  to: number;
}

/** Rows of the first (or last) instant read to find the sequence at a time; events of one millisecond share it. */
const AT_INSTANT = 100;

/**
 * The smallest sequence among the agency's first events at or after `at` (`created_at` order).
 * Events are numbered as they are written, so sequences follow `created_at`; within one
 * millisecond they may not follow `id`, hence the minimum over the first rows.
 */
async function firstAt(db: Db, agencyId: string, at: string): Promise<number | undefined> {
  const [row] = await db.all<{ first: number | null }>(sql`SELECT min(sequence) AS first FROM (
    SELECT ${events.sequence} AS sequence FROM ${events} INDEXED BY events_agency_page
    WHERE ${events.agencyId} = ${agencyId} AND ${events.createdAt} >= ${at}
    ORDER BY ${events.createdAt} LIMIT ${AT_INSTANT})`);
  return row?.first ?? undefined;
}

/** The largest sequence among the agency's last events before `at`. */
async function lastBefore(db: Db, agencyId: string, at: string): Promise<number | undefined> {
  const [row] = await db.all<{ last: number | null }>(sql`SELECT max(sequence) AS last FROM (
    SELECT ${events.sequence} AS sequence FROM ${events} INDEXED BY events_agency_page
    WHERE ${events.agencyId} = ${agencyId} AND ${events.createdAt} < ${at}
    ORDER BY ${events.createdAt} DESC LIMIT ${AT_INSTANT})`);
  return row?.last ?? undefined;
}

/** Whether the event numbered `sequence` is still kept (within the retention window). */
async function kept(db: Db, agencyId: string, sequence: number, cutoff: string): Promise<boolean> {
  const row = await db
    .select({ one: sql`1` })
    .from(events)
    .where(and(eq(events.agencyId, agencyId), eq(events.sequence, sequence), gte(events.createdAt, cutoff)))
    .get();
  return row !== undefined;
}

/** 422 for a range reaching past what is kept, naming the oldest sequence kept after `after` (walks the index once). */
async function expired(db: Db, agencyId: string, after: number, last: number, cutoff: string) {
  const oldest = await db
    .select({ sequence: events.sequence })
    .from(events)
    .where(and(eq(events.agencyId, agencyId), gt(events.sequence, after), gte(events.createdAt, cutoff)))
    .orderBy(asc(events.sequence))
    .limit(1)
    .get();
  return new DomainError("webhook_replay_range_expired", {
    details: { oldest_sequence: oldest?.sequence ?? last + 1, last_sequence: last },
  });
}

const invalid = (message: string, last: number) =>
  new DomainError("webhook_replay_range_invalid", { message, details: { last_sequence: last } });

/**
 * The sequences a range covers, as the agency's events stand now: the end defaults to the
 * latest event, and a later end is held to it (events written after this are delivered
 * live). A range whose first event is no longer kept (past the retention window, or swept)
 * is 422 `webhook_replay_range_expired`, naming the oldest kept; a reversed one, or one
 * starting past the latest event, is 422 `webhook_replay_range_invalid`. Sequences are
 * gapless and only the retention sweep removes events, so the first event being kept means
 * every later one is.
 */
export async function resolveRange(db: Db, agencyId: string, range: ReplayRange, now = Date.now()): Promise<Sequences> {
  const last = await lastSequence(db, agencyId);
  const cutoff = retentionCutoff(now);
  if ("afterSequence" in range) {
    const { afterSequence: after, untilSequence: until } = range;
    if (after > last) throw invalid(`after_sequence ${after} is past the latest event, ${last}.`, last);
    if (until !== undefined && until < after) throw invalid("until_sequence must not be below after_sequence.", last);
    const to = Math.min(until ?? last, last);
    if (after < to && !(await kept(db, agencyId, after + 1, cutoff)))
      throw await expired(db, agencyId, after, last, cutoff);
    return { from: after + 1, to };
  }
  const since = nowIso(Date.parse(range.since));
  const until = range.until === undefined ? undefined : nowIso(Date.parse(range.until));
  if (until !== undefined && until <= since) throw invalid("until must be after since.", last);
  const from = (await firstAt(db, agencyId, since > cutoff ? since : cutoff)) ?? last + 1;
  // Before the window, a range loses nothing only when no event was ever dropped.
  if (since < cutoff && from > 1 && last > 0) throw await expired(db, agencyId, 0, last, cutoff);
  const to = until === undefined ? last : ((await lastBefore(db, agencyId, until)) ?? 0);
  return { from, to };
}

/** The range's events of these types (null: every type), counted on the agency's sequence index. */
export async function countInRange(
  db: Db,
  agencyId: string,
  { from, to }: Sequences,
  types: readonly string[] | null,
): Promise<number> {
  if (from > to) return 0;
  const [row] = await db.all<{ n: number }>(sql`SELECT count(*) AS n FROM ${events}
    WHERE ${events.agencyId} = ${agencyId} AND ${events.sequence} BETWEEN ${from} AND ${to}
    ${types ? sql`AND ${events.eventType} IN (SELECT value FROM json_each(${JSON.stringify(types)}))` : sql``}`);
  return row?.n ?? 0;
}
