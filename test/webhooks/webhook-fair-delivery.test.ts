import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { webhookDeliveries, webhookEndpoints } from "../../src/db/schema";
import worker from "../../src/index";
import { consumeWebhooks } from "../../src/webhooks/delivery/batch";
import {
  BATCH_DEADLINE_MS,
  type ConsumerLimits,
  DELIVERY_TIMEOUT_MS,
  LEASE_MS,
} from "../../src/webhooks/delivery/limits";
import { DRAIN_SPACING_MS } from "../../src/webhooks/outbox/kick";
import { asInvocation } from "../support/d1-guard";
import { db, makeListing, makeTenant, mockFetch } from "../support/harness";
import { CONSUMER_BATCH_TIMEOUT_MS } from "../support/queue-config";
import {
  CONSUMER_BATCH,
  captureQueue,
  consumeBatch,
  emptyOutbox,
  insertEvents,
  registerEndpoints,
  WEBHOOK_QUEUE,
} from "../support/webhook-fixtures";
import { settle } from "../support/webhook-harness";

/** The goal: another agency's event reaches its fast receiver within 5 s of its write. */
const GOAL_MS = 5_000;

/** Production's time limits scaled by 1/10: 100 ms stand for the 1 s deadline, 1 s for the 10 s timeout. */
const SCALE = 0.1;
const limits: ConsumerLimits = {
  timeoutMs: DELIVERY_TIMEOUT_MS * SCALE,
  startWindowMs: 5_000 * SCALE,
  deadlineMs: BATCH_DEADLINE_MS * SCALE,
};
/** A's receivers hold every request 10.5 s (scaled) and then answer 503. */
const HOLD_MS = 10_500 * SCALE;

let queue: ReturnType<typeof captureQueue>;
beforeEach(() => {
  queue = captureQueue();
});
afterEach(() => vi.restoreAllMocks());

/** Receivers behind a fake network: `/a/` ones hold the request and honour its abort; the rest answer at once. */
function network(holdMs = HOLD_MS, holdStatus = 503) {
  const calls: { url: string; at: number }[] = [];
  const received: { url: string; at: number }[] = [];
  const ended: { url: string; at: number }[] = [];
  mockFetch(async (req, init) => {
    calls.push({ url: req.url, at: performance.now() });
    if (!req.url.includes("/a/")) {
      received.push({ url: req.url, at: performance.now() });
      return new Response("ok");
    }
    try {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, holdMs);
        init?.signal?.addEventListener("abort", () => {
          clearTimeout(timer);
          reject(init.signal!.reason);
        });
      });
      received.push({ url: req.url, at: performance.now() });
      return new Response("held", { status: holdStatus });
    } finally {
      ended.push({ url: req.url, at: performance.now() });
    }
  });
  return { calls, received, ended };
}

/** Counts the statements that hold endpoints past a batch's deadline: one per batch that handed over. */
function countHolds() {
  let holds = 0;
  const prepare = Object.getPrototypeOf(env.DB).prepare as D1Database["prepare"];
  vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
    if (/^UPDATE webhook_endpoints SET paused_until = \?2/.test(query)) holds++;
    return prepare.call(env.DB, query);
  });
  return () => holds;
}

/** One batch as the queue hands it over, settled only while its handler runs (what the queue reads then). */
async function queueBatch(ids: string[], ctx: ExecutionContext, attempts = 1) {
  const batch = createMessageBatch<{ delivery_id: string }>(
    WEBHOOK_QUEUE,
    ids.map((id, i) => ({ id: `${id}#${i}`, timestamp: new Date(), attempts, body: { delivery_id: id } })),
  );
  const settled = new Map<string, { how: "ack" | "retry"; delaySeconds?: number; late: boolean }[]>();
  let returned = false;
  for (const m of batch.messages) {
    const note = (how: "ack" | "retry", delaySeconds?: number) =>
      settled.set(m.body.delivery_id, [
        ...(settled.get(m.body.delivery_id) ?? []),
        { how, delaySeconds, late: returned },
      ]);
    m.ack = () => note("ack");
    m.retry = (o?: QueueRetryOptions) => note("retry", o?.delaySeconds);
  }
  const started = performance.now();
  await asInvocation(() => consumeWebhooks(batch, env, ctx, limits));
  returned = true;
  return { settled, ms: performance.now() - started };
}

describe("fair delivery: another agency's hanging receivers do not hold B's event", () => {
  it("A's 16 endpoints hold every request past the timeout and answer 503, 13 listings queued ahead of B's: B's receiver gets its listing.created within the bound", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const aEndpoints = await registerEndpoints(a, 16, "a");
    await registerEndpoints(b, 1, "b", ["listing.created"]);
    await emptyOutbox();
    await settle();
    queue.sent.length = 0;
    for (let i = 0; i < 13; i++) await makeListing(a);
    await settle();
    const aMessages = queue.sent.length;
    expect(aMessages, "one message per listing and endpoint of A").toBe(13 * 16);
    await makeListing(b);
    await settle();
    expect(queue.sent, "B's message is the last in the queue").toHaveLength(aMessages + 1);

    const net = network();
    const holds = countHolds();
    const background: Promise<void>[] = [];
    const settled = new Map<string, { how: "ack" | "retry"; delaySeconds?: number; late: boolean }[]>();
    const started = performance.now();
    let batches = 0;
    let heldToDeadline = 0;
    // The queue hands over the next batch as soon as a handler returns (queue_consumer_no_wait_for_wait_until).
    for (let i = 0; i < queue.sent.length && !net.received.some((r) => r.url.includes("/b/")); i += CONSUMER_BATCH) {
      const ctx = createExecutionContext();
      const before = holds();
      const result = await queueBatch(queue.sent.slice(i, i + CONSUMER_BATCH), ctx);
      background.push(waitOnExecutionContext(ctx));
      for (const [id, s] of result.settled) settled.set(id, [...(settled.get(id) ?? []), ...s]);
      batches++;
      if (holds() > before) heldToDeadline++;
    }
    const bReceipt = net.received.find((r) => r.url.includes("/b/"));
    expect(bReceipt, "B's receiver got its delivery").toBeDefined();
    expect(batches, "B's message came in the last batch").toBe(Math.ceil((aMessages + 1) / CONSUMER_BATCH));
    const aCallsBeforeB = net.calls.filter((c) => c.url.includes("/a/") && c.at < bReceipt!.at);
    expect(aCallsBeforeB.length, "one request per hanging endpoint, no more").toBeLessThanOrEqual(16);
    expect(new Set(aCallsBeforeB.map((c) => c.url)).size).toBe(aCallsBeforeB.length);
    // B did not wait for any of A's timeouts: it was delivered before the first of A's requests ended.
    expect(
      net.ended.filter((e) => e.at < bReceipt!.at),
      `B after ${bReceipt!.at - started} ms`,
    ).toEqual([]);

    // The bound in production terms: the drain's spacing, the queue's wait for a short batch, and one
    // deadline for each batch ahead of B that was held to it (it started attempts at A's receivers).
    expect(
      heldToDeadline,
      `${heldToDeadline} of ${batches} batches held the queue to their deadline`,
    ).toBeLessThanOrEqual(Math.ceil(16 / CONSUMER_BATCH));
    const bound = DRAIN_SPACING_MS + CONSUMER_BATCH_TIMEOUT_MS + heldToDeadline * BATCH_DEADLINE_MS;
    expect(bound, "leaves the D1 round trips of the batches ahead at least 1 s").toBeLessThanOrEqual(GOAL_MS - 1_000);

    // Every message was settled exactly once, while its handler ran; A's waiting ones come back past the lease.
    expect(settled.size).toBe(queue.sent.length);
    for (const [id, s] of settled) {
      expect(s, id).toHaveLength(1);
      expect(s[0]!.late, id).toBe(false);
    }
    const bId = queue.sent.at(-1)!;
    expect(settled.get(bId)).toEqual([{ how: "ack", delaySeconds: undefined, late: false }]);
    for (const id of queue.sent.slice(0, aMessages)) {
      const [s] = settled.get(id) ?? [];
      if (s === undefined) continue;
      expect(s.how, id).toBe("retry");
      expect(s.delaySeconds!, id).toBeGreaterThanOrEqual(LEASE_MS / 1000 - 1);
    }

    // In the background each attempt timed out: the breakers opened, the holds gave way to them, nothing was lost.
    await Promise.all(background);
    const endpoints = await db().select().from(webhookEndpoints).where(inArray(webhookEndpoints.id, aEndpoints)).all();
    const tried = endpoints.filter((e) => e.consecutiveFailures > 0);
    expect(tried.length).toBe(new Set(net.calls.filter((c) => c.url.includes("/a/")).map((c) => c.url)).size);
    for (const e of tried) {
      expect(e.consecutiveFailures, JSON.stringify(e)).toBe(1);
      expect(Date.parse(e.pausedUntil!) - Date.now(), JSON.stringify(e)).toBeGreaterThan(20_000);
    }
    const rows = await db()
      .select()
      .from(webhookDeliveries)
      .where(inArray(webhookDeliveries.endpointId, aEndpoints))
      .all();
    expect(rows.every((d) => d.status === "pending" && d.leasedUntil === null)).toBe(true);
    const attempted = rows.filter((d) => d.attempts > 0);
    expect(attempted.length).toBe(net.calls.filter((c) => c.url.includes("/a/")).length);
    for (const d of attempted) expect(d.lastError).toBe(`no answer within ${limits.timeoutMs / 1000} s`);
    expect(net.calls.filter((c) => c.url.includes("/a/")).length).toBeLessThanOrEqual(16);
  });
});

describe("a batch past its deadline", () => {
  it("hands its message back and delivers in the background; a copy meanwhile sends nothing; the redelivery is acked without a request", async () => {
    const t = await makeTenant();
    const [endpoint] = await registerEndpoints(t, 1, "a");
    await emptyOutbox();
    await settle();
    queue.sent.length = 0;
    await makeListing(t);
    await settle();
    expect(queue.sent).toHaveLength(1);
    const [id] = queue.sent as [string];
    // A slow receiver that does answer 2xx, after the deadline and inside the timeout.
    const net = network(limits.deadlineMs * 3, 200);

    const ctx = createExecutionContext();
    const first = await queueBatch([id], ctx);
    expect(net.received, "the handler returned before the receiver answered").toEqual([]);
    const [handed] = first.settled.get(id)!;
    expect(handed!.how).toBe("retry");
    expect(handed!.delaySeconds!).toBeGreaterThanOrEqual(LEASE_MS / 1000 - 1);
    const held = await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpoint!)).get();
    expect(Date.parse(held!.pausedUntil!), "the endpoint is held while its attempt runs").toBeGreaterThan(Date.now());

    // A copy of the message while the attempt is in flight: no second request, retried past the hold.
    const copy = await queueBatch([id], createExecutionContext(), 2);
    expect(copy.settled.get(id)![0]!.how).toBe("retry");
    expect(copy.settled.get(id)![0]!.delaySeconds!).toBeGreaterThanOrEqual(LEASE_MS / 1000 - 5);

    await waitOnExecutionContext(ctx);
    expect(net.calls, "one request for the delivery").toHaveLength(1);
    expect(net.received).toHaveLength(1);
    const row = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)).get();
    expect(row).toMatchObject({ status: "delivered", attempts: 1, leasedUntil: null });
    const freed = await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpoint!)).get();
    expect(freed, "the hold is freed once the attempt ended").toMatchObject({
      pausedUntil: null,
      consecutiveFailures: 0,
    });

    const again = await consumeBatch([id], { attempts: 2 });
    expect(again.acked).toEqual([id]);
    expect(net.calls, "the redelivery made no request").toHaveLength(1);
  });
});

describe("a media batch that drains the outbox", () => {
  it("returns only once the drain it kicked has sent the events: its messages are settled after it", async () => {
    const t = await makeTenant();
    await registerEndpoints(t, 2, "m");
    await emptyOutbox();
    await settle();
    queue.sent.length = 0;
    await insertEvents(t.agencyId, 3, { firstCreatedAt: Date.now() - 1_000 });
    const batch = createMessageBatch("alms-media-local", [
      { id: "m0", timestamp: new Date(), attempts: 1, body: { kind: "outbox.drain" } },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    expect(queue.sent, "the drain had sent every delivery when the handler returned").toHaveLength(3 * 2);
    await waitOnExecutionContext(ctx);
    expect(await getQueueResult(batch, ctx)).toMatchObject({ explicitAcks: ["m0"] });
  });
});
