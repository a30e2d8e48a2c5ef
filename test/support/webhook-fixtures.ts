import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getTableColumns } from "drizzle-orm";
import { expect, vi } from "vitest";
import { events } from "../../src/db/schema";
import { DEFAULT_SCOPES } from "../../src/domain/roles";
import worker from "../../src/index";
import { newId } from "../../src/lib/ids";
import { consumeWebhooks } from "../../src/webhooks/delivery/batch";
import type { ConsumerLimits } from "../../src/webhooks/delivery/limits";
import { createEndpoint } from "../../src/webhooks/endpoints/records";
import { sweepOutbox } from "../../src/webhooks/outbox/sweep";
import { asInvocation, D1_LIMITS } from "./d1-guard";
import { db, mockFetch, type Tenant } from "./harness";

export const WEBHOOK_QUEUE = "alms-webhooks-local";
export { CONSUMER_BATCH } from "./queue-config";

/** The queue's messages, in the order the drains sent them. */
export function captureQueue() {
  const sent: string[] = [];
  const sendBatch = vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockImplementation(async (messages) => {
    for (const m of messages) sent.push((m.body as { delivery_id: string }).delivery_id);
    return {} as QueueSendBatchResponse;
  });
  vi.spyOn(env.WEBHOOK_QUEUE, "send").mockImplementation(async (body) => {
    sent.push((body as { delivery_id: string }).delivery_id);
    return {} as QueueSendResponse;
  });
  return { sent, sendBatch };
}

/** 2xx at once, never (until aborted), a status at once, or a status (200 unless given) after a delay. */
export type Answer = "ok" | "hang" | number | { afterMs: number; status?: number };

/**
 * Receivers behind a fake network: each URL answers as `behaviour` says; "hang" never
 * answers and honours the request's AbortSignal, as a receiver that holds the connection.
 */
export function receivers(behaviour: (url: string) => Answer) {
  const received: { url: string; at: number; body: string }[] = [];
  const calls: { url: string; at: number }[] = [];
  const open = new Map<string, number>();
  const most = { overall: 0, perUrl: 0 };
  mockFetch(async (req, init) => {
    const url = req.url;
    calls.push({ url, at: performance.now() });
    open.set(url, (open.get(url) ?? 0) + 1);
    most.overall = Math.max(
      most.overall,
      [...open.values()].reduce((a, b) => a + b, 0),
    );
    most.perUrl = Math.max(most.perUrl, open.get(url)!);
    try {
      const answer = behaviour(url);
      if (answer === "hang") {
        const signal = init?.signal;
        return await new Promise<Response>((_, reject) => {
          signal?.addEventListener("abort", () => reject(signal.reason));
        });
      }
      if (typeof answer === "object") await new Promise((r) => setTimeout(r, answer.afterMs));
      received.push({ url, at: performance.now(), body: String(init?.body ?? "") });
      const status = typeof answer === "number" ? answer : typeof answer === "object" ? (answer.status ?? 200) : 200;
      return status === 200 ? new Response("ok") : new Response("no", { status });
    } finally {
      open.set(url, open.get(url)! - 1);
    }
  });
  return { received, calls, most };
}

/** An agency's receivers, registered as the route does (sealed secrets), without a request. */
export async function registerEndpoints(t: Tenant, n: number, name: string, eventTypes?: string[]) {
  const ids: string[] = [];
  for (let i = 0; i < n; i++) {
    const { endpoint } = await createEndpoint(db(), t.agencyId, env, {
      url: `http://localhost:9999/${name}/${i}`,
      eventTypes,
      scopes: new Set(DEFAULT_SCOPES),
    });
    ids.push(endpoint.id);
  }
  return ids;
}

/** Sends everything already in the outbox (the tenants' own sign-up events), so a test starts from an empty outbox. */
export async function emptyOutbox() {
  for (let i = 0; i < 10 && (await sweepOutbox(env)).events; i++);
}

/** Outbox rows written in bulk, each statement inside D1's bound-parameter limit, 20 statements a batch. */
export async function insertEvents(
  agencyId: string,
  n: number,
  opts: { type?: string; firstCreatedAt: number; stepMs?: number },
): Promise<string[]> {
  const rows = Array.from({ length: n }, (_, i) => ({
    id: newId("evt"),
    agencyId,
    eventType: opts.type ?? "listing.created",
    apiVersion: "2026-11-01",
    timestamp: Math.floor(opts.firstCreatedAt / 1000),
    data: { listing_number: `l${String(i).padStart(6, "0")}`, status: "Coming Soon" },
    createdAt: new Date(opts.firstCreatedAt + i * (opts.stepMs ?? 1)).toISOString(),
  }));
  const perStatement = Math.floor(D1_LIMITS.boundParameters / Object.keys(getTableColumns(events)).length);
  const d = db();
  const statements = [];
  for (let i = 0; i < rows.length; i += perStatement)
    statements.push(d.insert(events).values(rows.slice(i, i + perStatement)));
  for (let i = 0; i < statements.length; i += 20) {
    const [first, ...rest] = statements.slice(i, i + 20);
    await d.batch([first!, ...rest]);
  }
  return rows.map((r) => r.id);
}

/** An outbox row whose data is not JSON: what a bad migration or a manual edit could leave. */
export async function insertPoisonedEvent(agencyId: string, createdAt: number): Promise<string> {
  const id = newId("evt");
  await env.DB.prepare(
    "INSERT INTO events (id, agency_id, event_type, api_version, timestamp, data, created_at) VALUES (?, ?, ?, " +
      "?, ?, ?, ?)",
  )
    .bind(id, agencyId, "listing.created", "2026-11-01", 1, "{not json", new Date(createdAt).toISOString())
    .run();
  return id;
}

export interface Consumed {
  acked: string[];
  /** Delivery id → the delay asked of the queue. */
  retried: Map<string, number>;
  ms: number;
}

/**
 * One consumer batch of these deliveries, as the queue hands it over (message ids are the
 * delivery ids), through the consumer with the given time limits, counted as one invocation.
 */
export async function consumeBatch(
  deliveryIds: string[],
  opts: { limits?: Partial<ConsumerLimits>; attempts?: number } = {},
): Promise<Consumed> {
  const batch = createMessageBatch<{ delivery_id: string }>(
    WEBHOOK_QUEUE,
    deliveryIds.map((id, i) => ({
      id: `${id}#${i}`,
      timestamp: new Date(),
      attempts: opts.attempts ?? 1,
      body: { delivery_id: id },
    })),
  );
  const retried = new Map<string, number>();
  for (const m of batch.messages) {
    const retry = m.retry.bind(m);
    m.retry = (o?: QueueRetryOptions) => {
      retried.set(m.body.delivery_id, o?.delaySeconds ?? 0);
      retry(o);
    };
  }
  const ctx = createExecutionContext();
  const started = performance.now();
  await asInvocation(() => consumeWebhooks(batch, env, ctx, opts.limits));
  const ms = performance.now() - started;
  // What the batch left running past its deadline ends before the test reads the outcome.
  await waitOnExecutionContext(ctx);
  const result = await getQueueResult(batch, ctx);
  expect(result.retryBatch.retry, "the batch as a whole is never retried").toBe(false);
  expect(result.ackAll).toBe(false);
  return { acked: result.explicitAcks.map((id) => id.split("#")[0]!), retried, ms };
}

/** A batch through the Worker's own queue handler (the real time limits). */
export async function queueHandler(queue: string, deliveryIds: string[], attempts = 1) {
  const batch = createMessageBatch<{ delivery_id: string }>(
    queue,
    deliveryIds.map((id, i) => ({ id: `m${i}`, timestamp: new Date(), attempts, body: { delivery_id: id } })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  await waitOnExecutionContext(ctx);
  return getQueueResult(batch, ctx);
}

export const OVERLOADED = "D1_ERROR: D1 DB is overloaded. Too many requests queued.";

/**
 * Makes D1 answer `message` to the next `times` statements whose SQL matches `pattern`,
 * whether run alone or in a batch (which then fails as a whole, as D1's does).
 */
export function failD1(pattern: RegExp, times = 1, message = OVERLOADED) {
  const failing = new WeakSet<object>();
  let left = times;
  const prepare = Object.getPrototypeOf(env.DB).prepare as D1Database["prepare"];
  const batch = Object.getPrototypeOf(env.DB).batch as D1Database["batch"];
  const poisoned = (statement: D1PreparedStatement): D1PreparedStatement => {
    const proxy = new Proxy(statement, {
      get(target, prop) {
        if (prop === "bind") return (...values: unknown[]) => poisoned(target.bind(...values));
        if (prop === "run" || prop === "all" || prop === "raw" || prop === "first")
          return () => Promise.reject(new Error(message));
        const value = Reflect.get(target, prop, target);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    failing.add(proxy);
    return proxy;
  };
  vi.spyOn(env.DB, "prepare").mockImplementation(function (this: D1Database, query: string) {
    const statement = prepare.call(env.DB, query);
    if (left > 0 && pattern.test(query)) {
      left--;
      return poisoned(statement);
    }
    return statement;
  });
  vi.spyOn(env.DB, "batch").mockImplementation(async (statements) => {
    if (statements.some((s) => failing.has(s))) throw new Error(message);
    return batch.call(env.DB, statements);
  });
  return { left: () => left };
}

/**
 * Counts what D1 is asked from now on: every statement prepared (each statement run,
 * alone or in a batch, is prepared once) and the round trips (a batch is one).
 */
export function countD1() {
  const prepared: string[] = [];
  let batches = 0;
  let batched = 0;
  const prepare = Object.getPrototypeOf(env.DB).prepare as D1Database["prepare"];
  const batch = Object.getPrototypeOf(env.DB).batch as D1Database["batch"];
  vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
    prepared.push(query);
    return prepare.call(env.DB, query);
  });
  vi.spyOn(env.DB, "batch").mockImplementation(async (statements) => {
    batches++;
    batched += statements.length;
    return batch.call(env.DB, statements);
  });
  return {
    statements: () => prepared.length,
    roundTrips: () => batches + prepared.length - batched,
    matching: (pattern: RegExp) => prepared.filter((q) => pattern.test(q)).length,
    stop: () => {
      vi.mocked(env.DB.prepare).mockRestore();
      vi.mocked(env.DB.batch).mockRestore();
    },
  };
}
