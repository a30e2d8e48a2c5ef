import { and, eq, lt } from "drizzle-orm";
import { type Db, database } from "../db/client";
import {
  events,
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
import { SIGNATURE_HEADER, signPayload } from "./signing";

export const DELIVERY_TIMEOUT_MS = 10_000;
export const FIRST_RETRY_SECONDS = 30;
export const MAX_RETRY_DELAY_SECONDS = 12 * 60 * 60;

/**
 * Seconds before the queue redelivers a message after its failed attempt `attempt`
 * (1-based; a replay starts again at 1): 30 s doubling, capped at 12 hours. With the queue's 15 retries that is 16 attempts over about 65 hours, after
 * which the message goes to the dead-letter queue.
 */
export const retryDelay = (attempt: number) =>
  Math.min(FIRST_RETRY_SECONDS * 2 ** (attempt - 1), MAX_RETRY_DELAY_SECONDS);

export type Outcome = "delivered" | "retry" | "dead" | "skipped";

async function record(
  db: Db,
  deliveryId: string,
  attempt: number,
  started: number,
  status: number | null,
  error: string | null,
  final?: "delivered" | "dead",
) {
  const at = nowIso();
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
        ...(final ? { status: final } : {}),
        ...(final === "delivered" ? { deliveredAt: at } : {}),
      })
      .where(eq(webhookDeliveries.id, deliveryId)),
  ]);
}

/**
 * One attempt of one delivery. The envelope is built afresh: `event_id` stays, while
 * `timestamp` is this attempt's and `nonce` is new, so receivers' 5-minute and 10-minute
 * rules hold on retries. The receiver URL is checked again on every attempt. Attempts are
 * numbered per delivery across replays, so the log never repeats a number.
 */
export async function attemptDelivery(env: Env, deliveryId: string): Promise<Outcome> {
  const db = database(env.DB);
  const row = await db
    .select({ delivery: webhookDeliveries, endpoint: webhookEndpoints, event: events })
    .from(webhookDeliveries)
    .innerJoin(events, eq(events.id, webhookDeliveries.eventId))
    .leftJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
    .where(eq(webhookDeliveries.id, deliveryId))
    .get();
  if (row?.delivery.status !== "pending") return "skipped";
  const started = Date.now();
  const attempt = row.delivery.attempts + 1;
  const { endpoint, event } = row;
  if (!endpoint?.isActive) {
    await record(db, deliveryId, attempt, started, null, "endpoint removed", "dead");
    return "dead";
  }
  const verdict = checkOutboundUrl(endpoint.url, { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" });
  if (!verdict.ok) {
    await record(db, deliveryId, attempt, started, null, `receiver refused: url ${verdict.reason}`, "dead");
    return "dead";
  }
  const secret = await signingSecret(env, endpoint);
  const { status, error } = await post(
    verdict.url,
    secret,
    { id: event.id, type: event.eventType, apiVersion: event.apiVersion, data: event.data },
    deliveryId,
    started,
  );
  const delivered = error === null;
  await record(db, deliveryId, attempt, started, status, error, delivered ? "delivered" : undefined);
  return delivered ? "delivered" : "retry";
}

/**
 * The endpoint's signing secret. It opens only for the endpoint it was sealed for: a
 * ciphertext copied from another row throws, so nothing is ever signed with another
 * endpoint's secret (the caller logs it and retries; nothing is sent).
 */
async function signingSecret(env: Env, endpoint: WebhookEndpoint): Promise<string> {
  try {
    return await decrypt(env.SECRET_KEY, SECRET_PURPOSE, endpoint.secretSealed, secretBinding(endpoint));
  } catch {
    throw new Error(`the signing secret of webhook endpoint ${endpoint.id} does not open for this endpoint`);
  }
}

/** One signed POST of an envelope built for this attempt. */
async function post(
  url: string,
  secret: string,
  event: { id: string; type: string; apiVersion: string; data: unknown },
  deliveryId: string,
  started: number,
) {
  const body = JSON.stringify({
    event_id: event.id,
    event_type: event.type,
    api_version: event.apiVersion,
    timestamp: Math.floor(started / 1000),
    nonce: randomToken(16),
    data: event.data,
  });
  let status: number | null = null;
  let error: string | null = null;
  try {
    const res = await fetch(url, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.timeout(DELIVERY_TIMEOUT_MS),
      headers: {
        "Content-Type": "application/json",
        "User-Agent": "ALMS-Webhooks/1.0",
        [SIGNATURE_HEADER]: await signPayload(secret, body),
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
    error =
      e instanceof Error && e.name === "TimeoutError"
        ? `no answer within ${DELIVERY_TIMEOUT_MS / 1000} s`
        : `request failed: ${e instanceof Error ? e.message : String(e)}`;
  }
  return { status, error };
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

/**
 * The webhook queue's consumer: one message per delivery, retried with backoff. The
 * messages of a batch go to different receivers, so they are attempted concurrently, and
 * a failure of our own (D1, a sealed secret that does not open) retries that message
 * alone on the same schedule; it counts toward the retries like a receiver's failure.
 */
export async function consumeWebhooks(batch: MessageBatch<{ delivery_id: string }>, env: Env): Promise<void> {
  await Promise.all(
    batch.messages.map(async (message) => {
      let outcome: Outcome;
      try {
        outcome = await attemptDelivery(env, message.body.delivery_id);
      } catch (err) {
        console.error(
          JSON.stringify({
            level: "error",
            job: "webhook_delivery",
            delivery_id: message.body.delivery_id,
            attempt: message.attempts,
            error: String(err),
          }),
        );
        outcome = "retry";
      }
      if (outcome === "retry") message.retry({ delaySeconds: retryDelay(message.attempts) });
      else message.ack();
    }),
  );
}

/**
 * The dead-letter queue's consumer: a delivery that exhausted its retries is dead. Only a
 * pending one: a delivery replayed and delivered since must not be marked dead by a late
 * message.
 */
export async function consumeDeadWebhooks(batch: MessageBatch<{ delivery_id: string }>, env: Env): Promise<void> {
  const db = database(env.DB);
  for (const message of batch.messages) {
    await db
      .update(webhookDeliveries)
      .set({ status: "dead", updatedAt: nowIso() })
      .where(and(eq(webhookDeliveries.id, message.body.delivery_id), eq(webhookDeliveries.status, "pending")));
    message.ack();
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
