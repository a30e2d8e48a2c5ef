import { and, eq, gt, inArray, isNull, lt, or, sql } from "drizzle-orm";
import { type Db, database } from "../db/client";
import {
  events,
  type WebhookDelivery,
  type WebhookEndpoint,
  webhookDeliveries,
  webhookDeliveryAttempts,
  webhookEndpoints,
} from "../db/schema";
import { decrypt } from "../lib/crypto";
import { DomainError } from "../lib/errors";
import { newId, nowIso, randomToken } from "../lib/ids";
import { checkOutboundUrl } from "../lib/outbound-url";
import { SECRET_PURPOSE, secretBinding } from "./endpoints";
import { signatureHeaders } from "./signing";

export const DELIVERY_TIMEOUT_MS = 10_000;
export const FIRST_RETRY_SECONDS = 30;
export const MAX_RETRY_DELAY_SECONDS = 12 * 60 * 60;

/**
 * Seconds before the queue redelivers a message after its failed attempt `attempt`
 * (1-based; a replay starts again at 1): 30 s doubling, capped at 12 hours. With the queue's 15 retries that
 * is 16 attempts over about 65 hours, after
 * which the message goes to the dead-letter queue.
 */
export const retryDelay = (attempt: number) =>
  Math.min(FIRST_RETRY_SECONDS * 2 ** (attempt - 1), MAX_RETRY_DELAY_SECONDS);

/** Workers holds at most 6 connections open per invocation; a seventh fetch would wait, its timeout running. */
export const CONNECTIONS_PER_BATCH = 6;
/** Attempts one endpoint may have in flight in a batch; 1 while it is failing (a probe). */
export const ENDPOINT_IN_FLIGHT = 2;
/** Attempts start only this long into a batch; later ones wait for a later batch, so a batch ends within about 15 s. */
export const START_WINDOW_MS = 5_000;
/** How long one attempt holds its delivery: the timeout and time to record the outcome. */
export const LEASE_MS = DELIVERY_TIMEOUT_MS + 20_000;
/** Failed attempts in a row that open an endpoint's breaker; a timeout opens it at once. */
export const BREAKER_FAILURES = 3;
/** How long an open breaker pauses an endpoint: 30 s doubling per failure in a row, at most 10 minutes. */
export const BREAKER_FIRST_PAUSE_SECONDS = 30;
export const BREAKER_MAX_PAUSE_SECONDS = 600;

/** The consumer's time limits; tests shorten them. */
export interface ConsumerLimits {
  timeoutMs: number;
  startWindowMs: number;
}
const LIMITS: ConsumerLimits = { timeoutMs: DELIVERY_TIMEOUT_MS, startWindowMs: START_WINDOW_MS };

type Outcome = "delivered" | "failed" | "dead" | "skipped" | { leasedUntil: number };
type Health = "healthy" | { failed: true; timedOut: boolean } | undefined;

/**
 * The endpoint's breaker after an attempt: a success closes it; a failure counts, and
 * opens it (pauses the endpoint) at BREAKER_FAILURES in a row, or at once on a timeout.
 * The count and the pause are computed in the statement, so concurrent batches add up.
 */
function breakerAfter(db: Db, endpointId: string, health: Health, now = Date.now()) {
  if (!health) return [];
  const failures = webhookEndpoints.consecutiveFailures;
  if (health === "healthy")
    return [
      db
        .update(webhookEndpoints)
        .set({ consecutiveFailures: 0, pausedUntil: null })
        .where(and(eq(webhookEndpoints.id, endpointId), gt(failures, 0))),
    ];
  const pause = sql`min(${BREAKER_FIRST_PAUSE_SECONDS} << min(${failures}, 16), ${BREAKER_MAX_PAUSE_SECONDS})`;
  return [
    db
      .update(webhookEndpoints)
      .set({
        consecutiveFailures: sql`${failures} + 1`,
        pausedUntil: sql`CASE WHEN ${health.timedOut ? 1 : 0} OR ${failures} + 1 >= ${BREAKER_FAILURES}
          THEN strftime('%Y-%m-%dT%H:%M:%fZ', (${now} + 1000 * ${pause}) / 1000.0, 'unixepoch')
          ELSE ${webhookEndpoints.pausedUntil} END`,
      })
      .where(eq(webhookEndpoints.id, endpointId)),
  ];
}

async function record(
  db: Db,
  target: { deliveryId: string; endpointId: string },
  attempt: number,
  started: number,
  status: number | null,
  error: string | null,
  final?: "delivered" | "dead",
  health?: Health,
) {
  const at = nowIso();
  const { deliveryId, endpointId } = target;
  await db.batch([
    db.insert(webhookDeliveryAttempts).values({
      id: newId("wha"),
      deliveryId,
      attempt,
      attemptedAt: nowIso(started),
      responseStatus: status,
      latencyMs: Date.now() - started,
      error,
    }),
    db
      .update(webhookDeliveries)
      .set({
        attempts: attempt,
        lastResponseStatus: status,
        lastError: error,
        updatedAt: at,
        leasedUntil: null,
        ...(final ? { status: final } : {}),
        ...(final === "delivered" ? { deliveredAt: at } : {}),
      })
      .where(eq(webhookDeliveries.id, deliveryId)),
    ...breakerAfter(db, endpointId, health),
  ]);
}

/** A delivery of the batch with what its attempt needs from its endpoint (null once removed). */
interface Target {
  delivery: { id: string; status: WebhookDelivery["status"]; eventId: string; endpointId: string; agencyId: string };
  endpoint: Pick<
    WebhookEndpoint,
    "id" | "agencyId" | "url" | "isActive" | "secretSealed" | "consecutiveFailures" | "pausedUntil"
  > | null;
}

/** The batch's deliveries and endpoints, in one statement (the ids travel as one JSON parameter). */
async function loadTargets(db: Db, deliveryIds: string[]): Promise<Map<string, Target>> {
  const rows = await db
    .select({
      delivery: {
        id: webhookDeliveries.id,
        status: webhookDeliveries.status,
        eventId: webhookDeliveries.eventId,
        endpointId: webhookDeliveries.endpointId,
        agencyId: webhookDeliveries.agencyId,
      },
      endpoint: {
        id: webhookEndpoints.id,
        agencyId: webhookEndpoints.agencyId,
        url: webhookEndpoints.url,
        isActive: webhookEndpoints.isActive,
        secretSealed: webhookEndpoints.secretSealed,
        consecutiveFailures: webhookEndpoints.consecutiveFailures,
        pausedUntil: webhookEndpoints.pausedUntil,
      },
    })
    .from(webhookDeliveries)
    .leftJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(inArray(webhookDeliveries.id, sql`(SELECT value FROM json_each(${JSON.stringify(deliveryIds)}))`));
  return new Map(rows.map((r) => [r.delivery.id, r]));
}

/**
 * One attempt of one delivery. The attempt first takes the delivery's lease, so a
 * duplicate message (a redelivery, the same delivery twice in flight) never makes a
 * second request while one runs. The envelope is built afresh: `event_id` stays, while
 * `timestamp` is this attempt's and `nonce` is new, so receivers' 5-minute and 10-minute
 * rules hold on retries. The receiver URL is checked again on every attempt. Attempts are
 * numbered per delivery across replays, so the log never repeats a number.
 */
async function attemptDelivery(env: Env, db: Db, target: Target, timeoutMs: number): Promise<Outcome> {
  const deliveryId = target.delivery.id;
  const now = Date.now();
  const [lease] = await db
    .update(webhookDeliveries)
    .set({ leasedUntil: nowIso(now + LEASE_MS) })
    .where(
      and(
        eq(webhookDeliveries.id, deliveryId),
        eq(webhookDeliveries.status, "pending"),
        or(isNull(webhookDeliveries.leasedUntil), lt(webhookDeliveries.leasedUntil, nowIso(now))),
      ),
    )
    .returning({ attempts: webhookDeliveries.attempts });
  if (!lease) {
    const held = await db
      .select({ status: webhookDeliveries.status, leasedUntil: webhookDeliveries.leasedUntil })
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.id, deliveryId))
      .get();
    return held?.status === "pending" ? { leasedUntil: Date.parse(held.leasedUntil ?? "") || now } : "skipped";
  }
  try {
    return await attemptLeased(env, db, target, lease.attempts + 1, timeoutMs);
  } catch (err) {
    // A failure of our own: free the delivery for the message's retry (if D1 lets us; else the lease expires).
    await db
      .update(webhookDeliveries)
      .set({ leasedUntil: null })
      .where(eq(webhookDeliveries.id, deliveryId))
      .catch(() => undefined);
    throw err;
  }
}

async function attemptLeased(env: Env, db: Db, target: Target, attempt: number, timeoutMs: number): Promise<Outcome> {
  const { delivery, endpoint } = target;
  const ids = { deliveryId: delivery.id, endpointId: delivery.endpointId };
  const started = Date.now();
  if (!endpoint?.isActive) {
    await record(db, ids, attempt, started, null, "endpoint removed", "dead");
    return "dead";
  }
  const verdict = checkOutboundUrl(endpoint.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
  if (!verdict.ok) {
    await record(db, ids, attempt, started, null, `receiver refused: url ${verdict.reason}`, "dead");
    return "dead";
  }
  const event = await db.select().from(events).where(eq(events.id, delivery.eventId)).get();
  if (!event) {
    await record(db, ids, attempt, started, null, "event missing", "dead");
    return "dead";
  }
  const secret = await signingSecret(env, endpoint);
  const { status, error, timedOut } = await post(
    verdict.url,
    secret,
    { id: event.id, type: event.eventType, apiVersion: event.apiVersion, data: event.data },
    delivery.id,
    started,
    timeoutMs,
  );
  const delivered = error === null;
  await record(
    db,
    ids,
    attempt,
    started,
    status,
    error,
    delivered ? "delivered" : undefined,
    delivered ? "healthy" : { failed: true, timedOut },
  );
  return delivered ? "delivered" : "failed";
}

/**
 * The endpoint's signing secret. It opens only for the endpoint it was sealed for: a
 * ciphertext copied from another row throws, so nothing is ever signed with another
 * endpoint's secret (the caller logs it and retries; nothing is sent).
 */
async function signingSecret(
  env: Env,
  endpoint: Pick<WebhookEndpoint, "id" | "agencyId" | "secretSealed">,
): Promise<string> {
  try {
    return await decrypt(env.SECRET_KEY, SECRET_PURPOSE, endpoint.secretSealed, secretBinding(endpoint));
  } catch {
    throw new Error(`the signing secret of webhook endpoint ${endpoint.id} does not open for this endpoint`);
  }
}

/**
 * One signed POST of an envelope built for this attempt: `X-Webhook-Signature` over the raw
 * body, and the Standard Webhooks headers with `webhook-id` the event id (the same on every
 * attempt) and `webhook-timestamp` the envelope's `timestamp` (this attempt's).
 */
async function post(
  url: string,
  secret: string,
  event: { id: string; type: string; apiVersion: string; data: unknown },
  deliveryId: string,
  started: number,
  timeoutMs = DELIVERY_TIMEOUT_MS,
) {
  const timestamp = Math.floor(started / 1000);
  const body = JSON.stringify({
    event_id: event.id,
    event_type: event.type,
    api_version: event.apiVersion,
    timestamp,
    nonce: randomToken(16),
    data: event.data,
  });
  let status: number | null = null;
  let error: string | null = null;
  let timedOut = false;
  try {
    const res = await fetch(url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "ALMS-Webhooks/1.0",
        ...(await signatureHeaders(secret, { webhookId: event.id, timestamp, rawBody: body })),
        "X-Webhook-Event": event.type,
        "X-Webhook-Id": event.id,
        "X-Webhook-Delivery": deliveryId,
      },
      body,
    });
    status = res.status;
    await res.body?.cancel();
    if (status < 200 || status >= 300) error = `receiver answered ${status}`;
  } catch (e) {
    timedOut = e instanceof Error && e.name === "TimeoutError";
    error = timedOut
      ? `no answer within ${timeoutMs / 1000} s`
      : `request failed: ${e instanceof Error ? e.message : String(e)}`;
  }
  return { status, error, timedOut };
}

/** A signed `webhook.test` ping to one endpoint, answered synchronously; nothing is recorded. */
export async function sendTestEvent(env: Env, endpoint: WebhookEndpoint) {
  const verdict = checkOutboundUrl(endpoint.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
  if (!verdict.ok)
    throw new DomainError("webhook_url_not_allowed", {
      message: `url ${verdict.reason}.`,
      details: { field: "url", reason: verdict.reason },
    });
  const secret = await signingSecret(env, endpoint);
  const started = Date.now();
  const eventId = newId("evt_test");
  const data = { endpoint_id: endpoint.id, message: "A test event from the Agency Listing and Media Service." };
  const { status, error } = await post(
    verdict.url,
    secret,
    { id: eventId, type: "webhook.test", apiVersion: "2026-11-01", data },
    newId("whd_test"),
    started,
  );
  return {
    delivered: error === null,
    event_id: eventId,
    response_status: status,
    latency_ms: Date.now() - started,
    error,
  };
}

/** A first-come, first-served limit on attempts running at once. */
function slots(n: number) {
  let free = n;
  const waiting: (() => void)[] = [];
  return {
    async acquire() {
      if (free > 0) free--;
      else await new Promise<void>((resolve) => waiting.push(resolve));
    },
    release() {
      const next = waiting.shift();
      if (next) next();
      else free++;
    },
  };
}

interface Lane {
  agencyId: string;
  endpoint: Target["endpoint"];
  /** The endpoint failed before this batch: it is tried after the healthy ones, one attempt at a time. */
  failing: boolean;
  /** An attempt failed in this batch: the endpoint's other messages wait for a later batch. */
  failedHere: boolean;
  pending: { message: Message<{ delivery_id: string }>; target: Target }[];
}

/**
 * The endpoints of a batch in the order their attempts take connections: healthy
 * endpoints before failing ones, and round-robin across agencies (each agency's first
 * endpoint, then each one's second), so no agency's receivers go ahead of all others'.
 */
function inTurn(lanes: Lane[]): Lane[] {
  const seen = new Map<string, number>();
  return lanes
    .map((lane) => {
      const turn = seen.get(lane.agencyId) ?? 0;
      seen.set(lane.agencyId, turn + 1);
      return { lane, turn };
    })
    .sort((a, b) => Number(a.lane.failing) - Number(b.lane.failing) || a.turn - b.turn)
    .map(({ lane }) => lane);
}

const pausedUntil = (endpoint: Target["endpoint"]) => Date.parse(endpoint?.pausedUntil ?? "") || 0;

/**
 * The webhook queue's consumer: one message per delivery, each settled (acked, or
 * retried with backoff) as soon as its own attempt ends. Slow and failing receivers cost
 * their own endpoint's deliveries, not the batch:
 * - attempts run concurrently, at most CONNECTIONS_PER_BATCH at once and
 *   ENDPOINT_IN_FLIGHT per endpoint (1 for an endpoint that is failing), healthy
 *   endpoints first, round-robin across agencies;
 * - an endpoint whose attempt fails in this batch gets no further attempt in it, and one
 *   whose breaker is open (BREAKER_FAILURES failures in a row, or one timeout) gets none
 *   until its pause ends: those messages are retried later without a request;
 * - no attempt starts after START_WINDOW_MS, so a batch lasts at most about the window
 *   plus the 10 s timeout.
 * A message that is not attempted is retried as if it had failed (never sooner than the
 * schedule, and not before the endpoint's pause ends), so a delivery still gets its ~3 days
 * before the dead-letter queue. A failure of our own (D1, a sealed secret that does not
 * open) retries that message alone on the same schedule.
 */
export async function consumeWebhooks(
  batch: MessageBatch<{ delivery_id: string }>,
  env: Env,
  limits: Partial<ConsumerLimits> = {},
): Promise<void> {
  const { timeoutMs, startWindowMs } = { ...LIMITS, ...limits };
  const db = database(env.DB);
  const started = Date.now();
  const later = (message: Message<unknown>, notBefore = 0) =>
    message.retry({
      delaySeconds: Math.min(
        MAX_RETRY_DELAY_SECONDS,
        Math.max(retryDelay(message.attempts), Math.ceil((notBefore - Date.now()) / 1000)),
      ),
    });
  const logError = (message: Message<{ delivery_id: string }>, err: unknown) =>
    console.error(
      JSON.stringify({
        level: "error",
        job: "webhook_delivery",
        delivery_id: message.body.delivery_id,
        attempt: message.attempts,
        error: String(err),
      }),
    );

  let targets: Map<string, Target>;
  try {
    targets = await loadTargets(
      db,
      batch.messages.map((m) => m.body.delivery_id),
    );
  } catch (err) {
    for (const message of batch.messages) {
      logError(message, err);
      later(message);
    }
    return;
  }

  const byEndpoint = new Map<string, Lane>();
  for (const message of batch.messages) {
    const target = targets.get(message.body.delivery_id);
    if (target?.delivery.status !== "pending") {
      message.ack();
      continue;
    }
    const key = target.delivery.endpointId;
    let lane = byEndpoint.get(key);
    if (!lane) {
      const failing = (target.endpoint?.consecutiveFailures ?? 0) > 0;
      lane = { agencyId: target.delivery.agencyId, endpoint: target.endpoint, failing, failedHere: false, pending: [] };
      byEndpoint.set(key, lane);
    }
    lane.pending.push({ message, target });
  }

  const connections = slots(CONNECTIONS_PER_BATCH);
  const work = async (lane: Lane) => {
    for (let next = lane.pending.shift(); next; next = lane.pending.shift()) {
      const { message, target } = next;
      if (lane.failedHere || pausedUntil(lane.endpoint) > Date.now()) {
        later(message, pausedUntil(lane.endpoint));
        continue;
      }
      await connections.acquire();
      try {
        if (lane.failedHere || Date.now() - started > startWindowMs) {
          later(message);
          continue;
        }
        const outcome = await attemptDelivery(env, db, target, timeoutMs);
        if (outcome === "failed") {
          lane.failedHere = true;
          later(message);
        } else if (typeof outcome === "object") later(message, outcome.leasedUntil);
        else message.ack();
      } catch (err) {
        logError(message, err);
        later(message);
      } finally {
        connections.release();
      }
    }
  };
  const ordered = inTurn([...byEndpoint.values()]);
  const workers: Promise<void>[] = [];
  for (let i = 0; i < ENDPOINT_IN_FLIGHT; i++)
    for (const lane of ordered) if (i === 0 || !lane.failing) workers.push(work(lane));
  await Promise.all(workers);
}

/**
 * The dead-letter queue's consumer: a delivery that exhausted its retries is dead. Only a
 * pending one: a delivery replayed and delivered since must not be marked dead by a late
 * message. Each message is settled alone: one that cannot be recorded is retried.
 */
export async function consumeDeadWebhooks(batch: MessageBatch<{ delivery_id: string }>, env: Env): Promise<void> {
  const db = database(env.DB);
  for (const message of batch.messages) {
    try {
      await db
        .update(webhookDeliveries)
        .set({ status: "dead", leasedUntil: null, updatedAt: nowIso() })
        .where(and(eq(webhookDeliveries.id, message.body.delivery_id), eq(webhookDeliveries.status, "pending")));
      message.ack();
    } catch (err) {
      console.error(
        JSON.stringify({
          level: "error",
          job: "webhook_dead_letter",
          delivery_id: message.body.delivery_id,
          error: String(err),
        }),
      );
      message.retry({ delaySeconds: FIRST_RETRY_SECONDS });
    }
  }
}

/** Longer than the whole retry schedule (about 65 hours, at most 12 hours between attempts). */
export const STALE_PENDING_HOURS = 96;

/**
 * A delivery still pending long after its schedule would have ended has lost its queue
 * message (a dead letter its consumer could not record, say): it is marked dead so the
 * dashboard lists it for replay.
 */
export async function markStaleDeliveriesDead(env: Env, now = Date.now()): Promise<number> {
  const cutoff = nowIso(now - STALE_PENDING_HOURS * 3600 * 1000);
  const rows = await database(env.DB)
    .update(webhookDeliveries)
    .set({ status: "dead", lastError: `no attempt for ${STALE_PENDING_HOURS} hours`, updatedAt: nowIso(now) })
    .where(and(eq(webhookDeliveries.status, "pending"), lt(webhookDeliveries.updatedAt, cutoff)))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}
