import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq, inArray, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints } from "../../src/db/schema";
import worker from "../../src/index";
import { CLAIM_SECONDS } from "../../src/webhooks/outbox/claim";
import { drainOutbox } from "../../src/webhooks/outbox/drain";
import { asInvocation } from "../support/d1-guard";
import { captureErrorLogs, db, makeListing, makeTenant, type Tenant } from "../support/harness";
import {
  type Answer,
  captureQueue,
  consumeBatch,
  emptyOutbox,
  failD1,
  insertEvents,
  OVERLOADED,
  queueHandler,
  receivers,
  registerEndpoints,
  WEBHOOK_QUEUE,
} from "../support/webhook-fixtures";

let queue: ReturnType<typeof captureQueue>;
let network: ReturnType<typeof receivers>;
let answer: Answer = "ok";
beforeEach(() => {
  answer = "ok";
  queue = captureQueue();
  network = receivers(() => answer);
});
afterEach(() => vi.restoreAllMocks());

const drain = (now?: number) => asInvocation(() => drainOutbox(env, now));
/** The ids as one JSON parameter, inside D1's bound-parameter limit however many. */
const among = (ids: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;
const deliveriesOfEvents = (ids: string[]) =>
  db()
    .select()
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.eventId, among(ids)))
    .all();
const attemptsOf = (deliveryId: string) =>
  db().select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, deliveryId)).all();
const deliveryRow = async (id: string) =>
  (await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.id, id)).get())!;
const unsent = (ids: string[]) =>
  db()
    .select({ id: events.id, enqueuedAt: events.enqueuedAt, claimedUntil: events.claimedUntil })
    .from(events)
    .where(inArray(events.id, among(ids)))
    .all();

/** A D1 failure, as drizzle passes it on (wrapped, with D1's error as the cause). */
const overloaded = (e: unknown) => String((e as { cause?: unknown }).cause ?? e).includes(OVERLOADED);

async function cron(expression = "* * * * *", scheduledTime = Date.now()) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: expression, scheduledTime }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** An agency with `endpoints` receivers and `n` new events in the outbox (nothing else unsent). */
async function agencyWith(endpoints: number, n: number): Promise<{ t: Tenant; hooks: string[]; eventIds: string[] }> {
  const t = await makeTenant();
  const hooks = await registerEndpoints(t, endpoints, `x${Math.random().toString(36).slice(2, 8)}`);
  await emptyOutbox();
  queue.sent.length = 0;
  const eventIds = await insertEvents(t.agencyId, n, { firstCreatedAt: Date.now() - 1_000 });
  return { t, hooks, eventIds };
}

/** One delivery, fanned out and queued, ready for the consumer. */
async function oneDelivery() {
  const { eventIds } = await agencyWith(1, 1);
  await drain();
  const [delivery] = await deliveriesOfEvents(eventIds);
  return delivery!.id;
}

describe("every consumer and the sweep are idempotent under redelivery", () => {
  it("the same message delivered twice: one request; the second is acked without one", async () => {
    const id = await oneDelivery();
    const first = await queueHandler(WEBHOOK_QUEUE, [id]);
    expect(first.explicitAcks).toEqual(["m0"]);
    const second = await queueHandler(WEBHOOK_QUEUE, [id], 2);
    expect(second.explicitAcks).toEqual(["m0"]);
    expect(second.retryMessages).toEqual([]);
    expect(network.calls).toHaveLength(1);
    expect(await attemptsOf(id)).toHaveLength(1);
    expect(await deliveryRow(id)).toMatchObject({ status: "delivered", attempts: 1, leasedUntil: null });
  });

  it("the same delivery twice in flight (one batch, or two batches at once): one request", async () => {
    const id = await oneDelivery();
    answer = "hang";
    const sameBatch = await consumeBatch([id, id], { limits: { timeoutMs: 100 } });
    expect(network.calls, "the duplicate waits for the attempt that holds the delivery").toHaveLength(1);
    expect(sameBatch.acked).toEqual([]);
    expect(sameBatch.retried.get(id)).toBeGreaterThanOrEqual(30);

    const other = await oneDelivery();
    answer = "ok";
    const [a, b] = await Promise.all([consumeBatch([other]), consumeBatch([other])]);
    expect([...a.acked, ...b.acked]).toContain(other);
    const retried = [...a.retried.keys(), ...b.retried.keys()];
    // The copy that found the delivery leased waits; when it comes back, the delivery is done.
    if (retried.length) expect((await consumeBatch(retried)).acked).toEqual([other]);
    expect(await attemptsOf(other)).toHaveLength(1);
    expect(network.calls, "one request per delivery").toHaveLength(2);
  });

  it("the dead-letter consumer twice: the delivery is marked dead once, nothing else changes", async () => {
    const id = await oneDelivery();
    const first = await queueHandler("alms-webhooks-dlq-local", [id]);
    expect(first.explicitAcks).toEqual(["m0"]);
    const dead = await deliveryRow(id);
    expect(dead.status).toBe("dead");
    const second = await queueHandler("alms-webhooks-dlq-local", [id]);
    expect(second.explicitAcks).toEqual(["m0"]);
    expect(await deliveryRow(id)).toEqual(dead);
  });

  it("the dead-letter consumer settles message by message: one it cannot record is retried alone", async () => {
    const a = await oneDelivery();
    const b = await oneDelivery();
    failD1(/^update "webhook_deliveries"/i, 1);
    const logs = captureErrorLogs();
    const result = await queueHandler("alms-webhooks-dlq-local", [a, b]);
    expect(result.retryMessages).toEqual([{ msgId: "m0" }]);
    expect(result.explicitAcks).toEqual(["m1"]);
    expect(logs).toEqual([
      expect.objectContaining({
        level: "error",
        job: "webhook_dead_letter",
        delivery_id: a,
        error: expect.stringContaining('update "webhook_deliveries"'),
      }),
    ]);
    expect((await deliveryRow(a)).status).toBe("pending");
    expect((await deliveryRow(b)).status).toBe("dead");
  });

  it("two sweeps at once: every delivery made once, every message sent once", async () => {
    const { hooks, eventIds } = await agencyWith(2, 120);
    await Promise.all([cron(), cron()]);
    const deliveries = await deliveriesOfEvents(eventIds);
    expect(deliveries).toHaveLength(eventIds.length * hooks.length);
    expect([...queue.sent].sort()).toEqual(deliveries.map((d) => d.id).sort());
    expect(await cron()).toBeUndefined();
    expect(queue.sent).toHaveLength(deliveries.length);
  });

  it(
    "a drain that sent its messages but could not mark its events: the next drain sends again, the receiver gets " +
      "one",
    async () => {
      const { eventIds } = await agencyWith(1, 1);
      failD1(/^UPDATE events SET enqueued_at/, 1);
      await expect(drain()).rejects.toSatisfy(overloaded);
      expect(queue.sent).toHaveLength(1);
      expect(await unsent(eventIds)).toEqual([{ id: eventIds[0], enqueuedAt: null, claimedUntil: null }]);
      await drain();
      expect((await unsent(eventIds))[0]!.enqueuedAt).not.toBeNull();
      expect(queue.sent).toHaveLength(2);
      expect(queue.sent[0]).toBe(queue.sent[1]);
      // Sent apart, the two messages come in different batches.
      expect((await consumeBatch([queue.sent[0]!])).acked).toEqual([queue.sent[0]]);
      expect((await consumeBatch([queue.sent[1]!], { attempts: 1 })).acked).toEqual([queue.sent[1]]);
      expect(network.received).toHaveLength(1);
      expect(await attemptsOf(queue.sent[0]!)).toHaveLength(1);
    },
  );
});

describe("faults survived", () => {
  it("the queue refuses sends: the API still answers 201, nothing is lost, a later sweep completes", async () => {
    const t = await makeTenant();
    const [hook] = await registerEndpoints(t, 1, "q", ["listing.created"]);
    await emptyOutbox();
    queue.sendBatch.mockRejectedValue(new Error("queue down"));
    const logs = captureErrorLogs();
    const listing = await makeListing(t);
    await vi.waitFor(() => expect(queue.sendBatch).toHaveBeenCalled());
    const queueDown = {
      console: "error",
      level: "error",
      message: "outbox drain failed",
      job: "outbox_drain",
      error: "Error: queue down",
    };
    await vi.waitFor(() => expect(logs).toContainEqual(queueDown));
    expect(logs.filter((l) => l.error !== queueDown.error)).toEqual([]);
    const [created] = await db()
      .select({ id: events.id })
      .from(events)
      .where(and(eq(events.agencyId, t.agencyId), eq(events.eventType, "listing.created")))
      .all();
    expect(created, "the committed change has its event").toBeDefined();
    await vi.waitFor(async () => expect(await unsent([created!.id])).toMatchObject([{ claimedUntil: null }]));
    expect(await deliveriesOfEvents([created!.id])).toMatchObject([{ endpointId: hook, status: "pending" }]);
    queue.sendBatch.mockRestore();
    queue = captureQueue();
    await cron();
    const [delivery] = await deliveriesOfEvents([created!.id]);
    expect(queue.sent).toEqual([delivery!.id]);
    await consumeBatch(queue.sent);
    expect((await deliveryRow(delivery!.id)).status).toBe("delivered");
    expect(JSON.parse(network.received[0]!.body).data.listing_number).toBe(listing.listing_number);
  });

  it.each([
    ["claiming the page", /^\s*WITH RECURSIVE/],
    ["reading the subscribers", /^\s*SELECT id, agency_id, event_types, filters FROM webhook_endpoints/],
    ["inserting the deliveries", /^\s*INSERT INTO webhook_deliveries/],
    ["reading the pending deliveries", /^\s*SELECT id, agency_id, event_id, endpoint_id FROM webhook_deliveries/],
    ["marking the events sent", /^UPDATE events SET enqueued_at/],
  ])("D1 is overloaded while %s: nothing is lost, and the next drain completes", async (_, statement) => {
    const { hooks, eventIds } = await agencyWith(3, 5);
    const fault = failD1(statement, 1);
    await expect(drain()).rejects.toSatisfy(overloaded);
    expect(fault.left()).toBe(0);
    expect((await unsent(eventIds)).every((e) => e.enqueuedAt === null)).toBe(true);
    await drain();
    expect((await unsent(eventIds)).every((e) => e.enqueuedAt !== null)).toBe(true);
    const deliveries = await deliveriesOfEvents(eventIds);
    expect(deliveries).toHaveLength(eventIds.length * hooks.length);
    expect(
      deliveries.every((d) => queue.sent.includes(d.id)),
      "every delivery has its message",
    ).toBe(true);
  });

  it("D1 down for the whole drain: the claims expire, and a later drain completes", async () => {
    const { eventIds } = await agencyWith(1, 3);
    failD1(/^\s*INSERT INTO webhook_deliveries|^UPDATE events SET claimed_until = NULL/, 2);
    await expect(drain()).rejects.toSatisfy(overloaded);
    expect(await drain(), "still claimed by the drain that failed").toMatchObject({ events: 0 });
    await drain(Date.now() + (CLAIM_SECONDS + 1) * 1000);
    expect((await unsent(eventIds)).every((e) => e.enqueuedAt !== null)).toBe(true);
    expect(await deliveriesOfEvents(eventIds)).toHaveLength(3);
  });

  it("D1 is overloaded in the consumer: the message is retried alone, then delivered", async () => {
    const id = await oneDelivery();
    const other = await oneDelivery();
    // Twice: outcomes are written in groups, and a group D1 refuses is written again one outcome at a time.
    failD1(/^insert into "webhook_delivery_attempts"/i, 2);
    const logs = captureErrorLogs();
    const first = await consumeBatch([id, other]);
    // The failing message's request went out; recording it did not, so it is retried (at least once).
    expect(first.retried.size).toBe(1);
    const [failed] = [...first.retried.keys()];
    expect(first.acked).toEqual([failed === id ? other : id]);
    expect(await deliveryRow(failed!)).toMatchObject({ status: "pending", attempts: 0, leasedUntil: null });
    expect(logs.splice(0)).toEqual([
      expect.objectContaining({
        level: "error",
        job: "webhook_delivery",
        delivery_id: failed,
        error: expect.stringContaining("overloaded"),
      }),
    ]);
    const again = await consumeBatch([failed!], { attempts: 2 });
    expect(again.acked).toEqual([failed]);
    expect(await deliveryRow(failed!)).toMatchObject({ status: "delivered", attempts: 1 });

    failD1(/left join "webhook_endpoints"/i, 1);
    const unread = await consumeBatch([id, other]);
    expect(unread.acked).toEqual([]);
    expect([...unread.retried.keys()].sort()).toEqual([id, other].sort());
    // The failed read is logged for each message of the batch.
    expect(logs.map((l) => [l.level, l.job, l.delivery_id]).sort()).toEqual(
      [id, other].sort().map((d) => ["error", "webhook_delivery", d]),
    );
    expect(logs.every((l) => /overloaded/i.test(l.error))).toBe(true);
  });

  it(
    "a receiver that hangs past the timeout is retried later, without a request while its endpoint " + "is paused",
    async () => {
      const id = await oneDelivery();
      const { endpointId } = await deliveryRow(id);
      answer = "hang";
      const first = await consumeBatch([id], { limits: { timeoutMs: 100 } });
      expect(first.retried.get(id)).toBe(30);
      const [attempt] = await attemptsOf(id);
      expect(attempt).toMatchObject({ attempt: 1, responseStatus: null, error: "no answer within 0.1 s" });
      const endpoint = (await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId)).get())!;
      expect(endpoint.consecutiveFailures).toBe(1);
      const pause = Date.parse(endpoint.pausedUntil!) - Date.now();
      expect(pause).toBeGreaterThan(20_000);
      expect(pause).toBeLessThanOrEqual(30_000);

      // Redelivered while the endpoint is paused: retried again without a request.
      const early = await consumeBatch([id], { attempts: 2, limits: { timeoutMs: 100 } });
      expect(network.calls).toHaveLength(1);
      expect(early.retried.get(id)).toBeGreaterThanOrEqual(60);

      // After the pause, the receiver answers: delivered, and the breaker closes.
      await db()
        .update(webhookEndpoints)
        .set({ pausedUntil: new Date(Date.now() - 1).toISOString() })
        .where(eq(webhookEndpoints.id, endpointId));
      answer = "ok";
      const later = await consumeBatch([id], { attempts: 3 });
      expect(later.acked).toEqual([id]);
      expect(await deliveryRow(id)).toMatchObject({ status: "delivered", attempts: 2 });
      expect(await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId)).get()).toMatchObject(
        {
          consecutiveFailures: 0,
          pausedUntil: null,
        },
      );
    },
  );
});
