import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, count, gt, isNull } from "drizzle-orm";
import { expect, vi } from "vitest";
import { events } from "../../src/db/schema";
import worker from "../../src/index";
import { drainOutbox } from "../../src/webhooks/outbox/drain";
import { backgroundDrainDone } from "../../src/webhooks/outbox/kick";
import { call, db, mockFetch, type Tenant } from "./harness";

/** What the tests of webhook-driven features observe: queue messages, receivers' requests, the receivers' answer. */
export interface Receivers {
  /** Each message as sent: its delivery, and the shard its agency's rows are on. */
  sent: { delivery_id: string; shard?: string }[];
  received: { url: string; headers: Headers; body: string }[];
  answer: () => Response;
}

/**
 * Captures the webhook queue's messages (so each test drives the consumer itself) and
 * intercepts receivers' fetches, answering with `receivers.answer`. Call in beforeEach,
 * with vi.restoreAllMocks() in afterEach.
 */
export function interceptWebhooks(): Receivers {
  const receivers: Receivers = { sent: [], received: [], answer: () => new Response("ok") };
  vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockImplementation(async (messages) => {
    for (const m of messages) receivers.sent.push(m.body as { delivery_id: string; shard?: string });
    return {} as QueueSendBatchResponse;
  });
  vi.spyOn(env.WEBHOOK_QUEUE, "send").mockImplementation(async (body) => {
    receivers.sent.push(body as { delivery_id: string; shard?: string });
    return {} as QueueSendResponse;
  });
  mockFetch(async (req) => {
    receivers.received.push({ url: req.url, headers: req.headers, body: await req.text() });
    return receivers.answer();
  });
  return receivers;
}

export async function registerEndpoint(t: Tenant, url: string, eventTypes?: string[]) {
  const r = await call("/api/v1/webhooks/endpoints", {
    key: t.key,
    body: { url, ...(eventTypes ? { event_types: eventTypes } : {}) },
  });
  expect(r.status, r.text).toBe(201);
  return r.json as { id: string; signing_secret: string };
}

/** Runs the webhook queue's (or its dead-letter queue's) consumer on these messages. */
export async function consume(queue: string, messages: { delivery_id: string; attempts?: number; shard?: string }[]) {
  const batch = createMessageBatch(
    queue,
    messages.map((m, i) => ({
      id: `m${i}`,
      timestamp: new Date(),
      attempts: m.attempts ?? 1,
      body: { delivery_id: m.delivery_id, ...(m.shard ? { shard: m.shard } : {}) },
    })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  await waitOnExecutionContext(ctx);
  return getQueueResult(batch, ctx);
}

export const WEBHOOK_QUEUE = "alms-webhooks-local";
export const WEBHOOK_DLQ = "alms-webhooks-dlq-local";

/**
 * Every successful request also drains the outbox in the background; wait until no drain
 * holds a claim, so the drain a test runs next is the only one.
 */
export async function settle() {
  await backgroundDrainDone();
  await vi.waitFor(
    async () => {
      const [row] = await db()
        .select({ n: count() })
        .from(events)
        .where(and(isNull(events.enqueuedAt), gt(events.claimedUntil, new Date().toISOString())));
      expect(row!.n, "outbox events still claimed by a background drain").toBe(0);
    },
    { timeout: 5_000, interval: 20 },
  );
}

/** Waits until no background drain holds a claim on the outbox, then drains it once. */
export async function drained() {
  await settle();
  return drainOutbox(env);
}

export async function cron(expression: string, scheduledTime = Date.now()) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: expression, scheduledTime }), env, ctx);
  await waitOnExecutionContext(ctx);
}
