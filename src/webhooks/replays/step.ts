import { and, asc, eq, gt, lte, sql } from "drizzle-orm";
import { type Db, database } from "../../db/client";
import { events, type WebhookEndpoint, type WebhookReplay, webhookEndpoints } from "../../db/schema";
import { selects } from "../../domain/events/filters";
import { newId, nowIso } from "../../lib/ids";
import { logFailure } from "../../lib/telemetry/log";
import { attemptDelivery, batchSigners } from "../delivery/attempt";
import { recordAttempt } from "../delivery/batch";
import { claimBatch } from "../delivery/claim";
import { LIMITS } from "../delivery/limits";
import { type AttemptOutcome, outcomeWriter } from "../delivery/outcome-writer";
import { FIRST_RETRY_SECONDS } from "../delivery/retry-schedule";
import { jsonIds } from "../outbox/fan-out";
import { replayOf, stopReplay } from "./records";

/** Events one step hands to delivery at most. */
export const REPLAY_PAGE = 50;
/** Sequences one step looks through at most, so a step's read is bounded whatever the endpoint's types select. */
const REPLAY_SCAN = 1000;
/** Attempts start only this long into a step; the rest of its page goes to the queue. */
const SEND_WINDOW_MS = 5_000;

/** What the replay's driver does next: another step now, one at `at`, or nothing (the replay is over). */
export type StepOutcome = { next: "now" } | { next: "later"; at: number } | { next: "never" };

type Endpoint = Pick<WebhookEndpoint, "id" | "isActive" | "pausedUntil" | "eventTypes" | "filters">;
type PageEvent = { id: string; sequence: number | null; data: unknown };

/** The next events of the range of the endpoint's types, in sequence order, and the sequence the page ends at. */
async function nextPage(db: Db, replay: WebhookReplay, endpoint: Endpoint) {
  const end = Math.min(replay.toSequence, replay.cursor + REPLAY_SCAN);
  const types = endpoint.eventTypes;
  const rows: PageEvent[] = await db
    .select({ id: events.id, sequence: events.sequence, data: events.data })
    .from(events)
    .where(
      and(
        eq(events.agencyId, replay.agencyId),
        gt(events.sequence, replay.cursor),
        lte(events.sequence, end),
        types ? sql`${events.eventType} IN ${jsonIds(types)}` : undefined,
      ),
    )
    .orderBy(asc(events.sequence))
    .limit(REPLAY_PAGE);
  const cursor = rows.length === REPLAY_PAGE ? (rows[rows.length - 1]!.sequence ?? end) : end;
  return { rows, cursor };
}

/**
 * The page's events that failed at this endpoint: a delivery of them (made live or by a
 * replay) ended dead, and none was delivered. Each half reads its own partial index.
 */
async function failedOf(db: Db, replay: WebhookReplay, page: PageEvent[]): Promise<Set<string>> {
  const ids = jsonIds(page.map((e) => e.id));
  const mine = sql`endpoint_id = ${replay.endpointId} AND agency_id = ${replay.agencyId}`;
  const rows = await db.all<{ event_id: string; delivered: number; dead: number }>(sql`
    SELECT event_id, max(status = 'delivered') AS delivered, max(status = 'dead') AS dead FROM (
      SELECT event_id, status FROM webhook_deliveries WHERE event_id IN ${ids} AND ${mine} AND replay_id IS NULL
      UNION ALL
      SELECT event_id, status FROM webhook_deliveries WHERE event_id IN ${ids} AND ${mine} AND replay_id IS NOT NULL
    ) GROUP BY event_id`);
  return new Set(rows.filter((r) => r.dead && !r.delivered).map((r) => r.event_id));
}

/**
 * Hands the chosen events to delivery and moves the replay past the page (`skipped` more
 * of its events not sent), or ends it when the range is through and the page empty, in one
 * batch, both guarded by the replay still running from where this step read it: a cancel
 * in between, or a step run twice, writes nothing.
 * Returns the new deliveries' ids in sequence order, or undefined when the guard failed.
 */
async function handOver(d1: D1Database, replay: WebhookReplay, chosen: PageEvent[], skipped: number, cursor: number) {
  const rows = chosen.map((e) => [newId("whd"), e.id, replay.endpointId, replay.agencyId, replay.id]);
  // Done once a step past the end sends nothing: the last page's events are sent first.
  const done = cursor >= replay.toSequence && rows.length === 0;
  const at = nowIso();
  const [, moved] = await d1.batch([
    d1
      .prepare(
        `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, agency_id, status, replay_id)
        SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
          json_extract(value, '$[3]'), 'pending', json_extract(value, '$[4]')
        FROM json_each(?1)
        WHERE EXISTS (SELECT 1 FROM webhook_replays
          WHERE id = ?2 AND agency_id = ?4 AND status = 'running' AND cursor = ?3)
        ON CONFLICT DO NOTHING`,
      )
      .bind(JSON.stringify(rows), replay.id, replay.cursor, replay.agencyId),
    d1
      .prepare(
        `UPDATE webhook_replays SET cursor = ?1, events_sent = events_sent + ?2,
          events_skipped = events_skipped + ?3, status = CASE WHEN ?4 THEN 'done' ELSE status END,
          finished_at = CASE WHEN ?4 THEN ?5 ELSE NULL END, updated_at = ?5
        WHERE id = ?6 AND agency_id = ?8 AND status = 'running' AND cursor = ?7
        RETURNING id`,
      )
      .bind(cursor, rows.length, skipped, done ? 1 : 0, at, replay.id, replay.cursor, replay.agencyId),
  ]);
  return moved?.results.length ? rows.map((r) => r[0] as string) : undefined;
}

/** Queues deliveries the step did not settle: the webhook consumer tries them on its schedule. */
async function toQueue(env: Env, ids: string[], delaySeconds: number) {
  for (let i = 0; i < ids.length; i += 100)
    await env.WEBHOOK_QUEUE.sendBatch(ids.slice(i, i + 100).map((id) => ({ body: { delivery_id: id }, delaySeconds })));
}

/**
 * Sends the new deliveries one at a time, in sequence order, like the consumer does (a
 * lease, a signed attempt, its outcome in the log and the endpoint's breaker). At the
 * first failed attempt, or once SEND_WINDOW_MS has passed, the rest go to the queue: a
 * failed delivery and those after it wait for the first retry, so the receiver is not
 * pressed while it fails; otherwise at once. Returns whether an attempt failed.
 */
async function send(env: Env, ids: string[]): Promise<boolean> {
  const db = database(env.DB);
  const started = Date.now();
  const claim = await claimBatch(db, ids, started);
  const writer = outcomeWriter(env.DB, claim.lease);
  const signerOf = batchSigners(env);
  const written: Promise<void>[] = [];
  const later: string[] = [];
  const queued: string[] = [];
  let failed = false;
  for (const id of ids) {
    const target = claim.targets.get(id);
    const attempts = claim.leased.get(id);
    if (!target || attempts === undefined) {
      queued.push(id);
      continue;
    }
    if (failed || Date.now() - started > SEND_WINDOW_MS) {
      written.push(writer.release(id));
      (failed ? later : queued).push(id);
      continue;
    }
    const event = claim.events.get(target.delivery.eventId);
    let outcome: AttemptOutcome;
    try {
      outcome = await attemptDelivery(env, target, event, attempts + 1, LIMITS.timeoutMs, signerOf);
    } catch (err) {
      logFailure("webhook replay attempt failed", { job: "webhook_replay", delivery_id: id }, err);
      written.push(writer.release(id));
      later.push(id);
      failed = true;
      continue;
    }
    recordAttempt(env, target, event?.eventType, outcome);
    written.push(writer.record(outcome));
    if (outcome.health !== undefined && outcome.health !== "healthy") {
      failed = true;
      later.push(id);
    }
  }
  await Promise.allSettled(written);
  await toQueue(env, queued, 0);
  await toQueue(env, later, FIRST_RETRY_SECONDS);
  return failed;
}

/**
 * One step of a running replay, under its agency's shard's environment: the next page of
 * the range (REPLAY_PAGE events of the endpoint's types at most, within REPLAY_SCAN
 * sequences), filtered like a live delivery (and to failed events, when asked), handed to
 * delivery and sent in order. A removed endpoint ends the replay; an endpoint whose breaker
 * is open, or whose attempt failed, holds it until the receiver may answer again.
 */
export async function replayStep(env: Env, agencyId: string, replayId: string): Promise<StepOutcome> {
  const db = database(env.DB);
  const replay = await replayOf(db, agencyId, replayId);
  if (replay?.status !== "running") return { next: "never" };
  const endpoint = await db
    .select({
      id: webhookEndpoints.id,
      isActive: webhookEndpoints.isActive,
      pausedUntil: webhookEndpoints.pausedUntil,
      eventTypes: webhookEndpoints.eventTypes,
      filters: webhookEndpoints.filters,
    })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.id, replay.endpointId), eq(webhookEndpoints.agencyId, agencyId)))
    .get();
  if (!endpoint?.isActive) {
    await stopReplay(db, replay, "endpoint removed");
    return { next: "never" };
  }
  const paused = Date.parse(endpoint.pausedUntil ?? "") || 0;
  if (paused > Date.now()) return { next: "later", at: paused };
  const { rows, cursor } = await nextPage(db, replay, endpoint);
  const failed = replay.onlyFailed && rows.length ? await failedOf(db, replay, rows) : undefined;
  const chosen = rows.filter((e) => selects(endpoint.filters, e.data) && (!failed || failed.has(e.id)));
  const ids = await handOver(env.DB, replay, chosen, rows.length - chosen.length, cursor);
  // Cancelled, or moved on by a step run twice: the next step reads where it stands.
  if (!ids) return { next: "now" };
  if (!ids.length) return cursor >= replay.toSequence ? { next: "never" } : { next: "now" };
  if (await send(env, ids)) return { next: "later", at: Date.now() + FIRST_RETRY_SECONDS * 1000 };
  return { next: "now" };
}
