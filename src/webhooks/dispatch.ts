import { type SQL, sql } from "drizzle-orm";
import { type Db, database } from "../db/client";
import { doublingBackoff } from "../lib/backoff";
import { newId, nowIso } from "../lib/ids";
import { errorText, log } from "../lib/log";

/** Events one drain claims at most. With 16 endpoints an agency, that is at most 800 deliveries. */
export const PAGE_EVENTS = 50;
/** One agency's share of a page: a burst takes at most half, whatever else is waiting. */
export const AGENCY_EVENTS_PER_PAGE = 25;
/** Agencies a claim looks at; a page cannot give a first turn to more agencies than it has events. */
export const AGENCIES_PER_PAGE = PAGE_EVENTS;
/** How long a drain holds the events it claimed; a drain that dies releases them by expiry. */
export const CLAIM_SECONDS = 60;
/** Failed fan-outs of one event before it is set aside: about 15 minutes of retries. */
export const MAX_FAN_OUT_ATTEMPTS = 5;
/** Seconds before a failed event is claimed again: 1 minute doubling, at most an hour. */
export const fanOutRetrySeconds = (failures: number) => doublingBackoff(failures, 60, 3600);
/** Queues accept at most 100 messages per sendBatch. */
const MESSAGES_PER_SEND = 100;

/** Where the next claim starts its walk over agencies, so every agency gets turns when many wait. */
let rotation = "";

interface ClaimedEvent {
  id: string;
  agency_id: string;
  event_type: string;
  created_at: string;
  data: string;
  attempts: number;
}

/**
 * Claims a page of unsent events in one statement, round-robin across agencies: every
 * agency with unsent events (up to AGENCIES_PER_PAGE of them, starting after the last
 * agency the previous claim reached) offers its oldest unclaimed events, at most
 * AGENCY_EVENTS_PER_PAGE; the page takes every agency's first turn, then every second
 * turn, oldest first within a turn. The walk over agencies is one index seek per agency
 * (events_unsent), so the statement reads about AGENCIES_PER_PAGE × AGENCY_EVENTS_PER_PAGE
 * rows however long the outbox is. D1 runs writes one at a time, so concurrent drains in
 * other isolates never claim the same event.
 */
export function claimStatement(now: number, after: string): SQL {
  const unsent = sql`enqueued_at IS NULL AND set_aside_at IS NULL
    AND (claimed_until IS NULL OR claimed_until < ${nowIso(now)})`;
  return sql`
    WITH RECURSIVE
      later(agency_id, n) AS (
        SELECT (SELECT min(agency_id) FROM events WHERE ${unsent} AND agency_id > ${after}), 1
        UNION ALL
        SELECT (SELECT min(agency_id) FROM events WHERE ${unsent} AND agency_id > later.agency_id), n + 1
        FROM later WHERE agency_id IS NOT NULL AND n < ${AGENCIES_PER_PAGE}
      ),
      earlier(agency_id, n) AS (
        SELECT (SELECT min(agency_id) FROM events WHERE ${unsent} AND agency_id <= ${after}), 1
        UNION ALL
        SELECT (SELECT min(agency_id) FROM events
                WHERE ${unsent} AND agency_id > earlier.agency_id AND agency_id <= ${after}), n + 1
        FROM earlier WHERE agency_id IS NOT NULL AND n < ${AGENCIES_PER_PAGE}
      ),
      busy(agency_id) AS (
        SELECT agency_id FROM (
          SELECT agency_id, n FROM later WHERE agency_id IS NOT NULL
          UNION ALL
          SELECT agency_id, n + ${AGENCIES_PER_PAGE} FROM earlier WHERE agency_id IS NOT NULL
        ) ORDER BY n LIMIT ${AGENCIES_PER_PAGE}
      ),
      offered AS (
        SELECT e.id, e.created_at,
          row_number() OVER (PARTITION BY e.agency_id ORDER BY e.created_at, e.id) AS turn
        FROM busy b JOIN events e ON e.id IN (
          -- The partial index holds unsent events only; the events API's (agency_id, created_at, id)
          -- index would also walk every event the agency was ever sent.
          SELECT u.id FROM events u INDEXED BY events_unsent
          WHERE u.agency_id = b.agency_id AND u.enqueued_at IS NULL AND u.set_aside_at IS NULL
            AND (u.claimed_until IS NULL OR u.claimed_until < ${nowIso(now)})
          ORDER BY u.created_at, u.id LIMIT ${AGENCY_EVENTS_PER_PAGE}
        )
      )
    UPDATE events SET claimed_until = ${nowIso(now + CLAIM_SECONDS * 1000)}
    WHERE id IN (SELECT id FROM offered ORDER BY turn, created_at, id LIMIT ${PAGE_EVENTS})
    RETURNING id, agency_id, event_type, created_at, data, attempts`;
}

async function claimPage(db: Db, now: number): Promise<ClaimedEvent[]> {
  const after = rotation;
  const claimed = await db.all<ClaimedEvent>(claimStatement(now, after));
  const agencies = [...new Set(claimed.map((e) => e.agency_id))].sort();
  // The walk went up from `after`, then wrapped around to the start: the last agency it reached.
  rotation = agencies.filter((a) => a <= after).at(-1) ?? agencies.at(-1) ?? after;
  return claimed.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

/** The ids as one JSON array: a single bound parameter however many there are. */
const jsonIds = (ids: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;

interface Subscriber {
  id: string;
  agencyId: string;
  /** null: every type; an Error: the stored list does not parse. */
  eventTypes: string[] | null | Error;
}

async function subscribersOf(db: Db, agencyIds: string[]): Promise<Subscriber[]> {
  // event_types is read as text and parsed per endpoint, so one bad row fails only its own agency's events.
  const rows = await db.all<{ id: string; agency_id: string; event_types: string | null }>(sql`
    SELECT id, agency_id, event_types FROM webhook_endpoints
    WHERE agency_id IN ${jsonIds(agencyIds)} AND is_active = 1`);
  return rows.map((r) => {
    let eventTypes: Subscriber["eventTypes"] = null;
    try {
      const parsed: unknown = r.event_types === null ? null : JSON.parse(r.event_types);
      if (parsed !== null && !(Array.isArray(parsed) && parsed.every((t) => typeof t === "string")))
        throw new Error("not a list of event types");
      eventTypes = parsed as string[] | null;
    } catch (e) {
      eventTypes = new Error(`endpoint ${r.id}: event_types ${e instanceof Error ? e.message : String(e)}`);
    }
    return { id: r.id, agencyId: r.agency_id, eventTypes };
  });
}

type DeliveryRow = [id: string, eventId: string, endpointId: string, agencyId: string];

/**
 * The delivery rows of one event: one per active endpoint of its agency subscribed to
 * its type. Throws when the event cannot be delivered as stored (its data does not
 * parse, a subscriber's list does not): that event's failure, not the page's.
 */
function deliveriesOf(event: ClaimedEvent, subscribers: Subscriber[]): DeliveryRow[] {
  try {
    JSON.parse(event.data);
  } catch (e) {
    throw new Error(`event data is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const rows: DeliveryRow[] = [];
  for (const s of subscribers) {
    if (s.agencyId !== event.agency_id) continue;
    if (s.eventTypes instanceof Error) throw s.eventTypes;
    if (s.eventTypes === null || s.eventTypes.includes(event.event_type))
      rows.push([newId("whd"), event.id, s.id, event.agency_id]);
  }
  return rows;
}

/**
 * Messages in round-robin order across agencies: each agency's first delivery, then
 * each one's second, and so on, so the queue holds no agency's burst in front of
 * another agency's delivery.
 */
function interleave(
  deliveries: { id: string; agency_id: string; event_id: string; endpoint_id: string }[],
  order: Map<string, number>,
) {
  const turn = new Map<string, number>();
  const agencyRank = new Map<string, number>();
  const ranked = deliveries
    .sort(
      (a, b) =>
        (order.get(a.event_id) ?? 0) - (order.get(b.event_id) ?? 0) || a.endpoint_id.localeCompare(b.endpoint_id),
    )
    .map((d) => {
      const t = turn.get(d.agency_id) ?? 0;
      turn.set(d.agency_id, t + 1);
      if (!agencyRank.has(d.agency_id)) agencyRank.set(d.agency_id, agencyRank.size);
      return { id: d.id, turn: t, agency: agencyRank.get(d.agency_id)! };
    });
  return ranked.sort((a, b) => a.turn - b.turn || a.agency - b.agency).map((d) => d.id);
}

/** Inserts the rows (unique per event and endpoint) and sends one message per pending delivery of the events. */
async function fanOut(db: Db, env: Env, events: ClaimedEvent[], rows: DeliveryRow[]): Promise<number> {
  if (!events.length) return 0;
  if (rows.length) {
    // One statement whatever the page holds: the rows travel as one JSON parameter.
    await db.run(sql`
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, agency_id)
      SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
        json_extract(value, '$[3]')
      FROM json_each(${JSON.stringify(rows)}) WHERE true
      ON CONFLICT DO NOTHING`);
  }
  // Rows left by an earlier drain whose send failed are pending too, and go out now.
  const pending = await db.all<{ id: string; agency_id: string; event_id: string; endpoint_id: string }>(sql`
    SELECT id, agency_id, event_id, endpoint_id FROM webhook_deliveries
    WHERE event_id IN ${jsonIds(events.map((e) => e.id))} AND status = 'pending'`);
  const ids = interleave(pending, new Map(events.map((e, i) => [e.id, i])));
  for (let i = 0; i < ids.length; i += MESSAGES_PER_SEND) {
    await env.WEBHOOK_QUEUE.sendBatch(ids.slice(i, i + MESSAGES_PER_SEND).map((id) => ({ body: { delivery_id: id } })));
  }
  return ids.length;
}

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
  if (!page.length) return { events: 0, messages: 0, failed: 0 };
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
  return { events: page.length, messages, failed: failed.length };
}

/** Drains one kick may run back to back, so a steady stream of writes cannot hold an invocation open. */
export const KICK_MAX_DRAINS = 4;
/**
 * Drains of one isolate start at least this far apart. Each drain is about 5 D1 queries,
 * one of them the claim's walk over agencies, whatever it finds; under a stream of writes
 * a drain per request would spend more of the one D1 writer than the writes themselves.
 * Spaced, one drain sends what every request of the last interval wrote, for at most this
 * much added delay before an event reaches the queue.
 */
export const DRAIN_SPACING_MS = 100;

/** One drain at a time per isolate: changes that land while one runs (or waits its turn) make it run once more. */
let inFlight: Promise<void> | undefined;
let again = false;
let lastDrainAt = Number.NEGATIVE_INFINITY;
function coalescedDrain(env: Env): Promise<void> {
  if (inFlight) {
    again = true;
    return inFlight;
  }
  inFlight = (async () => {
    let drains = 0;
    do {
      again = false;
      const wait = lastDrainAt + DRAIN_SPACING_MS - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      lastDrainAt = Date.now();
      await drainOutbox(env);
    } while (again && ++drains < KICK_MAX_DRAINS);
  })().finally(() => {
    inFlight = undefined;
  });
  return inFlight;
}

/** Resolves once this isolate's background drain, if one is running or waiting, has finished. */
export async function backgroundDrainDone(): Promise<void> {
  while (inFlight) await inFlight.catch(() => undefined);
}

/**
 * Drains one Cron invocation runs at most: 40 pages, 2,000 events at most, and about
 * 6 D1 queries and 8 sendBatch calls each, far inside one invocation's limits.
 */
export const SWEEP_MAX_DRAINS = 40;

/**
 * The Cron sweeper: drains until nothing is left to claim (or the per-run bound is
 * reached), so a backlog larger than one page does not wait a minute per page.
 */
export async function sweepOutbox(env: Env): Promise<Drained> {
  const total = { events: 0, messages: 0, failed: 0 };
  for (let i = 0; i < SWEEP_MAX_DRAINS; i++) {
    const drained = await drainOutbox(env);
    total.events += drained.events;
    total.messages += drained.messages;
    total.failed += drained.failed;
    if (!drained.events) break;
  }
  return total;
}

/**
 * Sends the outbox's new events to the queue in the background of the current
 * invocation, for any code that wrote events (a request, a queue consumer, a Cron job).
 * Failures are logged only: the every-minute sweep sends whatever this leaves behind.
 */
export function kickOutbox(env: Env, ctx: Pick<ExecutionContext, "waitUntil">): void {
  ctx.waitUntil(
    coalescedDrain(env).catch((err: unknown) =>
      log.error("outbox drain failed", { job: "outbox_drain", error: errorText(err) }),
    ),
  );
}
