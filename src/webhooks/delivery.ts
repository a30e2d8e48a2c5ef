import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import { type Db, database } from "../db/client";
import { events, type WebhookDelivery, type WebhookEndpoint, webhookDeliveries, webhookEndpoints } from "../db/schema";
import { doublingBackoff } from "../lib/backoff";
import { decrypt } from "../lib/crypto";
import { DomainError } from "../lib/errors";
import { newId, nowIso, randomToken } from "../lib/ids";
import { errorText, log } from "../lib/log";
import { checkOutboundUrl } from "../lib/outbound-url";
import { SECRET_PURPOSE, secretBinding } from "./endpoints";
import { type AttemptOutcome, outcomeWriter } from "./outcome-writer";
import { type Signer, signer } from "./signing";

export const DELIVERY_TIMEOUT_MS = 10_000;
export const FIRST_RETRY_SECONDS = 30;
export const MAX_RETRY_DELAY_SECONDS = 12 * 60 * 60;

/**
 * Seconds before the queue redelivers a message after its failed attempt `attempt`
 * (1-based; a replay starts again at 1): 30 s doubling, capped at 12 hours. With the queue's 15 retries that
 * is 16 attempts over about 65 hours, after
 * which the message goes to the dead-letter queue.
 */
export const retryDelay = (attempt: number) => doublingBackoff(attempt, FIRST_RETRY_SECONDS, MAX_RETRY_DELAY_SECONDS);

/** Workers holds at most 6 connections open per invocation; a seventh fetch would wait, its timeout running. */
export const CONNECTIONS_PER_BATCH = 6;
/** Attempts one endpoint may have in flight in a batch; 1 while it is failing (a probe). */
export const ENDPOINT_IN_FLIGHT = 2;
/** Attempts start only this long into a batch; later ones wait for a later batch, so a batch ends within about 15 s. */
export const START_WINDOW_MS = 5_000;
/**
 * How long a batch holds the deliveries it leased, from its start: the start window, the
 * timeout of an attempt started at its end, and time to record the outcome.
 */
export const LEASE_MS = START_WINDOW_MS + DELIVERY_TIMEOUT_MS + 15_000;
export { BREAKER_FAILURES, BREAKER_FIRST_PAUSE_SECONDS } from "./endpoint-breakers";

/** The consumer's time limits; tests shorten them. */
export interface ConsumerLimits {
  timeoutMs: number;
  startWindowMs: number;
}
const LIMITS: ConsumerLimits = { timeoutMs: DELIVERY_TIMEOUT_MS, startWindowMs: START_WINDOW_MS };

/** A delivery of the batch with what its attempt needs from its endpoint (null once removed). */
interface Target {
  delivery: Pick<WebhookDelivery, "id" | "status" | "eventId" | "endpointId" | "agencyId" | "leasedUntil">;
  endpoint: Pick<
    WebhookEndpoint,
    "id" | "agencyId" | "url" | "isActive" | "secretSealed" | "consecutiveFailures" | "pausedUntil"
  > | null;
}

type StoredEvent = typeof events.$inferSelect;

/** What a batch holds after its lease: every delivery named, the leased ones' attempt numbers and events. */
interface Claim {
  /** The lease's expiry, also the mark of the rows this batch holds. */
  lease: string;
  targets: Map<string, Target>;
  /** Delivery id → its attempts so far, for the deliveries this batch leased. */
  leased: Map<string, number>;
  events: Map<string, StoredEvent>;
}

/**
 * Leases the batch's deliverable rows and loads what their attempts need, in one D1
 * round trip (a batch of three statements, each taking the ids as one JSON parameter, so
 * a batch of any size stays inside D1's 100-parameter limit): the lease takes every
 * pending delivery no other attempt holds whose endpoint is not paused; then the
 * deliveries with their endpoints, and the leased deliveries' events. The lease is what
 * keeps one request in flight per delivery: a duplicate message, here or in a batch
 * running at the same time, finds the row held and waits.
 */
async function claimBatch(db: Db, deliveryIds: string[], now: number): Promise<Claim> {
  const lease = nowIso(now + LEASE_MS);
  const ids = sql`(SELECT value FROM json_each(${JSON.stringify(deliveryIds)}))`;
  const [leased, rows, loaded] = await db.batch([
    db
      .update(webhookDeliveries)
      .set({ leasedUntil: lease })
      .where(
        and(
          inArray(webhookDeliveries.id, ids),
          eq(webhookDeliveries.status, "pending"),
          or(isNull(webhookDeliveries.leasedUntil), lt(webhookDeliveries.leasedUntil, nowIso(now))),
          sql`NOT EXISTS (SELECT 1 FROM webhook_endpoints e
            WHERE e.id = webhook_deliveries.endpoint_id AND e.paused_until > ${nowIso(now)})`,
        ),
      )
      .returning({ id: webhookDeliveries.id, attempts: webhookDeliveries.attempts }),
    // Flat, with no column name twice: D1 returns a batch's rows as objects keyed by column name.
    db
      .select({
        id: webhookDeliveries.id,
        status: webhookDeliveries.status,
        eventId: webhookDeliveries.eventId,
        endpointId: webhookDeliveries.endpointId,
        agencyId: webhookDeliveries.agencyId,
        leasedUntil: webhookDeliveries.leasedUntil,
        endpointFound: sql<string | null>`${webhookEndpoints.id}`.as("endpoint_found"),
        endpointAgencyId: sql<string | null>`${webhookEndpoints.agencyId}`.as("endpoint_agency_id"),
        url: webhookEndpoints.url,
        isActive: webhookEndpoints.isActive,
        secretSealed: webhookEndpoints.secretSealed,
        consecutiveFailures: webhookEndpoints.consecutiveFailures,
        pausedUntil: webhookEndpoints.pausedUntil,
      })
      .from(webhookDeliveries)
      .leftJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
      .where(inArray(webhookDeliveries.id, ids)),
    db
      .select()
      .from(events)
      .where(
        inArray(
          events.id,
          db
            .select({ id: webhookDeliveries.eventId })
            .from(webhookDeliveries)
            .where(and(inArray(webhookDeliveries.id, ids), eq(webhookDeliveries.leasedUntil, lease))),
        ),
      ),
  ]);
  return {
    lease,
    targets: new Map(
      rows.map(({ endpointFound, endpointAgencyId, url, isActive, secretSealed, ...delivery }) => {
        const { consecutiveFailures, pausedUntil, ...rest } = delivery;
        const endpoint =
          endpointFound === null || endpointAgencyId === null || url === null || secretSealed === null
            ? null
            : {
                id: endpointFound,
                agencyId: endpointAgencyId,
                url,
                isActive: Boolean(isActive),
                secretSealed,
                consecutiveFailures: consecutiveFailures ?? 0,
                pausedUntil,
              };
        return [delivery.id, { delivery: rest, endpoint }];
      }),
    ),
    leased: new Map(leased.map((r) => [r.id, r.attempts])),
    events: new Map(loaded.map((e) => [e.id, e])),
  };
}

/**
 * One attempt of one leased delivery; its outcome is recorded by the caller. The envelope
 * is built afresh: `event_id` stays, while `timestamp` is this attempt's and `nonce` is
 * new, so receivers' 5-minute and 10-minute rules hold on retries. The receiver URL is
 * checked again on every attempt. Attempts are numbered per delivery across replays, so
 * the log never repeats a number. Throws on a failure of our own (a sealed secret that
 * does not open): nothing is sent.
 */
async function attempt(
  env: Env,
  target: Target,
  event: StoredEvent | undefined,
  number: number,
  timeoutMs: number,
  signerOf: (endpoint: NonNullable<Target["endpoint"]>) => Promise<Signer>,
): Promise<AttemptOutcome> {
  const { delivery, endpoint } = target;
  const started = Date.now();
  const outcome = { deliveryId: delivery.id, endpointId: delivery.endpointId, attempt: number, started };
  const dead = (error: string): AttemptOutcome => ({ ...outcome, latencyMs: 0, status: null, error, final: "dead" });
  if (!endpoint?.isActive) return dead("endpoint removed");
  const verdict = checkOutboundUrl(endpoint.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
  if (!verdict.ok) return dead(`receiver refused: url ${verdict.reason}`);
  if (!event) return dead("event missing");
  const sign = await signerOf(endpoint);
  const { status, error, timedOut } = await post(
    verdict.url,
    sign,
    { id: event.id, type: event.eventType, apiVersion: event.apiVersion, data: event.data },
    delivery.id,
    started,
    timeoutMs,
  );
  const delivered = error === null;
  return {
    ...outcome,
    latencyMs: Date.now() - started,
    status,
    error,
    final: delivered ? "delivered" : undefined,
    health: delivered ? "healthy" : { failed: true, timedOut },
  };
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
  sign: Signer,
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
        ...(await sign({ webhookId: event.id, timestamp, rawBody: body })),
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
  const sign = await signer(await signingSecret(env, endpoint));
  const started = Date.now();
  const eventId = newId("evt_test");
  const data = { endpoint_id: endpoint.id, message: "A test event from the Agency Listing and Media Service." };
  const { status, error } = await post(
    verdict.url,
    sign,
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
  /** The endpoint failed before this batch: it is tried after the healthy ones, one attempt at a time. */
  failing: boolean;
  /** An attempt failed in this batch: the endpoint's other messages wait for a later batch. */
  failedHere: boolean;
  pending: { message: Message<{ delivery_id: string }>; target: Target; attempts: number }[];
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
 * The webhook queue's consumer: one message per delivery. The batch's D1 work is a few
 * round trips whatever its size: one leases and loads every deliverable row (claimBatch),
 * and the outcomes are written in groups as attempts end (outcomeWriter); each message is
 * settled (acked, or retried with backoff) once its own outcome is written. Slow and
 * failing receivers cost their own endpoint's deliveries, not the batch:
 * - attempts run concurrently, at most CONNECTIONS_PER_BATCH requests open at once and
 *   ENDPOINT_IN_FLIGHT per endpoint (1 for an endpoint that is failing), healthy
 *   endpoints first, round-robin across agencies;
 * - an endpoint whose attempt fails in this batch gets no further attempt in it, and one
 *   whose breaker is open (BREAKER_FAILURES failures in a row, or one timeout) gets none
 *   until its pause ends: those messages are retried later without a request;
 * - no attempt starts after START_WINDOW_MS, so a batch lasts at most about the window
 *   plus the 10 s timeout.
 * A message that is not attempted is retried as if it had failed (never sooner than the
 * schedule, and not before the endpoint's pause ends), so a delivery still gets its ~3 days
 * before the dead-letter queue; the lease of a delivery leased but not attempted is freed.
 * A failure of our own (D1, a sealed secret that does not open) retries that message
 * alone on the same schedule. A crash after a request and before its outcome is written
 * leaves the message unsettled: it is delivered again (at least once).
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
    log.error("webhook delivery failed", {
      job: "webhook_delivery",
      delivery_id: message.body.delivery_id,
      attempt: message.attempts,
      error: errorText(err),
    });

  let claim: Claim;
  try {
    claim = await claimBatch(db, [...new Set(batch.messages.map((m) => m.body.delivery_id))], started);
  } catch (err) {
    for (const message of batch.messages) {
      logError(message, err);
      later(message);
    }
    return;
  }

  const byEndpoint = new Map<string, Lane>();
  const taken = new Set<string>();
  for (const message of batch.messages) {
    const id = message.body.delivery_id;
    const target = claim.targets.get(id);
    if (target?.delivery.status !== "pending") {
      message.ack();
      continue;
    }
    const attempts = claim.leased.get(id);
    if (attempts === undefined || taken.has(id)) {
      // Another attempt holds it (in this batch or another), or its endpoint is paused.
      later(message, Math.max(Date.parse(target.delivery.leasedUntil ?? "") || 0, pausedUntil(target.endpoint)));
      continue;
    }
    taken.add(id);
    const key = target.delivery.endpointId;
    let lane = byEndpoint.get(key);
    if (!lane) {
      const failing = (target.endpoint?.consecutiveFailures ?? 0) > 0;
      lane = { agencyId: target.delivery.agencyId, failing, failedHere: false, pending: [] };
      byEndpoint.set(key, lane);
    }
    lane.pending.push({ message, target, attempts });
  }

  const writer = outcomeWriter(env.DB, claim.lease);
  // Each endpoint's secret is opened, and its signing keys imported, once per batch.
  const signers = new Map<string, Promise<Signer>>();
  const signerOf = (endpoint: NonNullable<Target["endpoint"]>) => {
    let found = signers.get(endpoint.id);
    if (!found) {
      found = signingSecret(env, endpoint).then(signer);
      signers.set(endpoint.id, found);
    }
    return found;
  };
  const settling: Promise<void>[] = [];
  /** Settles the message once its delivery's lease is freed (or, if D1 refuses, left to expire). */
  const putBack = (message: Message<{ delivery_id: string }>) =>
    settling.push(
      writer.release(message.body.delivery_id).then(
        () => later(message),
        () => later(message),
      ),
    );
  const connections = slots(CONNECTIONS_PER_BATCH);
  const work = async (lane: Lane) => {
    for (let next = lane.pending.shift(); next; next = lane.pending.shift()) {
      const { message, target, attempts } = next;
      if (lane.failedHere) {
        putBack(message);
        continue;
      }
      let outcome: AttemptOutcome;
      await connections.acquire();
      try {
        if (lane.failedHere || Date.now() - started > startWindowMs) {
          putBack(message);
          continue;
        }
        outcome = await attempt(
          env,
          target,
          claim.events.get(target.delivery.eventId),
          attempts + 1,
          timeoutMs,
          signerOf,
        );
      } catch (err) {
        logError(message, err);
        putBack(message);
        continue;
      } finally {
        connections.release();
      }
      const failed = outcome.health !== undefined && outcome.health !== "healthy";
      if (failed) lane.failedHere = true;
      settling.push(
        writer.record(outcome).then(
          () => (failed ? later(message) : message.ack()),
          (err: unknown) => {
            logError(message, err);
            later(message);
          },
        ),
      );
    }
  };
  const ordered = inTurn([...byEndpoint.values()]);
  const workers: Promise<void>[] = [];
  for (let i = 0; i < ENDPOINT_IN_FLIGHT; i++)
    for (const lane of ordered) if (i === 0 || !lane.failing) workers.push(work(lane));
  await Promise.all(workers);
  await Promise.all(settling);
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
      log.error("dead letter not recorded", {
        job: "webhook_dead_letter",
        delivery_id: message.body.delivery_id,
        error: errorText(err),
      });
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
