import { sql } from "drizzle-orm";
import { type Db, database } from "../../db/client";
import { doublingBackoff } from "../../lib/backoff";
import { nowIso } from "../../lib/ids";
import { log } from "../../lib/telemetry/log";
import { AGENCY_EVENTS_PER_PAGE, type ClaimedEvent, claimPage, PAGE_EVENTS } from "./claim";
import { type DeliveryRow, deliveriesOf, fanOut, jsonIds, subscribersOf } from "./fan-out";

/** Failed fan-outs of one event before it is set aside: about 15 minutes of retries. */
export const MAX_FAN_OUT_ATTEMPTS = 5;
/** Seconds before a failed event is claimed again: 1 minute doubling, at most an hour. */
const fanOutRetrySeconds = (failures: number) => doublingBackoff(failures, 60, 3600);

/**
 * Records the events whose fan-out failed: the attempt and its error, a later claim after
 * a backoff, and after MAX_FAN_OUT_ATTEMPTS the event is set aside with its error.
 */
async function recordFailures(db: Db, failed: { event: ClaimedEvent; error: string }[], now: number) {
  if (!failed.length) return;
  const rows = failed.map(({ event, error }) => {
    const attempts = event.attempts + 1;
    const setAside = attempts >= MAX_FAN_OUT_ATTEMPTS;
    return [
      event.id,
      attempts,
      error.slice(0, 500),
      setAside ? null : nowIso(now + fanOutRetrySeconds(attempts) * 1000),
      setAside ? nowIso(now) : null,
    ];
  });
  await db.run(sql`
    UPDATE events SET attempts = json_extract(f.value, '$[1]'), last_error = json_extract(f.value, '$[2]'),
      claimed_until = json_extract(f.value, '$[3]'), set_aside_at = json_extract(f.value, '$[4]')
    FROM json_each(${JSON.stringify(rows)}) AS f
    WHERE events.id = json_extract(f.value, '$[0]') AND events.enqueued_at IS NULL`);
  for (const { event, error } of failed)
    log.error("event fan-out failed", {
      job: "outbox_drain",
      event_id: event.id,
      attempts: event.attempts + 1,
      set_aside: event.attempts + 1 >= MAX_FAN_OUT_ATTEMPTS,
      error,
    });
}

export interface Drained {
  events: number;
  /** The page was full (as a whole, or one agency's share of it): more events may be waiting. */
  full: boolean;
  messages: number;
  failed: number;
}

/**
 * Drains one page of the outbox into the webhook queue: claims it (claimPage), builds
 * each event's delivery rows, inserts them (unique per pair) and sends one queue message
 * per pending delivery; events are marked enqueued only after their messages were
 * accepted. An event whose own rows cannot be built (see deliveriesOf) is recorded and
 * retried later, then set aside; it does not hold the rest of the page. A failure of the
 * insert or the send is not any event's: the claims are released (or expire, if the drain
 * died) and the next drain (after the next change, and every minute by Cron) sends them
 * again. Delivery is at-least-once; receivers deduplicate on `event_id`.
 */
export async function drainOutbox(env: Env, now = Date.now()): Promise<Drained> {
  const db = database(env.DB);
  const page = await claimPage(db, now);
  if (!page.length) return { events: 0, full: false, messages: 0, failed: 0 };
  const perAgency = new Map<string, number>();
  for (const e of page) perAgency.set(e.agency_id, (perAgency.get(e.agency_id) ?? 0) + 1);
  const full = page.length >= PAGE_EVENTS || [...perAgency.values()].some((n) => n >= AGENCY_EVENTS_PER_PAGE);
  const ready: ClaimedEvent[] = [];
  const failed: { event: ClaimedEvent; error: string }[] = [];
  let messages: number;
  try {
    const subscribers = await subscribersOf(db, [...new Set(page.map((e) => e.agency_id))]);
    const rows: DeliveryRow[] = [];
    for (const event of page) {
      try {
        rows.push(...deliveriesOf(event, subscribers));
        ready.push(event);
      } catch (err) {
        failed.push({ event, error: err instanceof Error ? err.message : String(err) });
      }
    }
    messages = await fanOut(db, env, ready, rows);
    if (ready.length)
      await db.run(sql`UPDATE events SET enqueued_at = ${nowIso()} WHERE id IN ${jsonIds(ready.map((e) => e.id))}`);
  } catch (err) {
    const unfailed = page.filter((e) => !failed.some((f) => f.event === e));
    await db
      .run(sql`UPDATE events SET claimed_until = NULL
        WHERE id IN ${jsonIds(unfailed.map((e) => e.id))} AND enqueued_at IS NULL`)
      .catch(() => undefined);
    await recordFailures(db, failed, now).catch(() => undefined);
    throw err;
  }
  await recordFailures(db, failed, now);
  return { events: page.length, full, messages, failed: failed.length };
}
