import { env } from "cloudflare:workers";
import { and, count, eq, inArray, isNull, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, webhookDeliveries, webhookEndpoints } from "../../src/db/schema";
import { CONNECTIONS_PER_BATCH, ENDPOINT_IN_FLIGHT } from "../../src/webhooks/delivery/limits";
import { BREAKER_FAILURES } from "../../src/webhooks/endpoints/breakers";
import { AGENCY_EVENTS_PER_PAGE, claimStatement, PAGE_EVENTS } from "../../src/webhooks/outbox/claim";
import { drainOutbox, MAX_FAN_OUT_ATTEMPTS } from "../../src/webhooks/outbox/drain";
import { sweepOutbox } from "../../src/webhooks/outbox/sweep";
import { asInvocation } from "../support/d1-guard";
import { captureErrorLogs, db, makeTenant } from "../support/harness";
import {
  CONSUMER_BATCH,
  captureQueue,
  consumeBatch,
  emptyOutbox,
  insertEvents,
  insertPoisonedEvent,
  receivers,
  registerEndpoints,
} from "../support/webhook-fixtures";

let queue: ReturnType<typeof captureQueue>;
beforeEach(() => {
  queue = captureQueue();
  receivers(() => "ok");
});
afterEach(() => vi.restoreAllMocks());

const drain = () => asInvocation(() => drainOutbox(env));
/** An outbox row's delivery state (its data is left unread: the poisoned row's does not parse). */
const eventRow = (id: string) =>
  db()
    .select({
      enqueuedAt: events.enqueuedAt,
      claimedUntil: events.claimedUntil,
      attempts: events.attempts,
      lastError: events.lastError,
      setAsideAt: events.setAsideAt,
    })
    .from(events)
    .where(eq(events.id, id))
    .get();
const deliveriesTo = (endpointId: string) =>
  db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId)).all();

/**
 * Agency A at the endpoint cap (16 receivers of every type) emits 1,000 events, the
 * oldest of them poisoned; then agency B, with one receiver, emits one listing.created.
 */
async function burst() {
  const a = await makeTenant();
  const b = await makeTenant();
  const aEndpoints = await registerEndpoints(a, 16, "a");
  const [bEndpoint] = await registerEndpoints(b, 1, "b", ["listing.created"]);
  await emptyOutbox();
  queue.sent.length = 0;
  const t0 = Date.now() - 3_600_000;
  const poisoned = await insertPoisonedEvent(a.agencyId, t0 - 1_000);
  const aEvents = await insertEvents(a.agencyId, 1_000, { firstCreatedAt: t0 });
  const [bEvent] = await insertEvents(b.agencyId, 1, { firstCreatedAt: t0 + 60_000 });
  return { a, b, aEndpoints, bEndpoint: bEndpoint!, poisoned, aEvents, bEvent: bEvent! };
}

describe("one agency's burst does not hold back another agency's delivery", () => {
  it(
    "healthy receivers: B's delivery is in the first page and the first consumer batch; the poisoned row holds " +
      "nothing",
    async () => {
      const { a, aEndpoints, bEndpoint, poisoned, aEvents, bEvent } = await burst();
      const logs = captureErrorLogs();

      const first = await drain();
      // The page takes turns: A's oldest (the poisoned row) and B's only event, then A's next 24.
      expect(first).toEqual({
        events: 1 + (AGENCY_EVENTS_PER_PAGE - 1) + 1,
        full: true,
        messages: 24 * 16 + 1,
        failed: 1,
      });
      expect((await eventRow(bEvent))!.enqueuedAt, "B's event left in the first page").not.toBeNull();
      const [toB] = await deliveriesTo(bEndpoint);
      const firstBatch = queue.sent.slice(0, CONSUMER_BATCH);
      expect(firstBatch, "B's message is in the first consumer batch").toContain(toB!.id);
      expect(queue.sent.indexOf(toB!.id)).toBeLessThan(2);

      // The poisoned row is recorded and waits; the rest of A's page went out.
      const poison = (await eventRow(poisoned))!;
      expect(poison).toMatchObject({ attempts: 1, enqueuedAt: null, setAsideAt: null });
      expect(poison.lastError).toMatch(/JSON/);
      expect(Date.parse(poison.claimedUntil!)).toBeGreaterThan(Date.now() + 30_000);

      const consumed = await consumeBatch(firstBatch);
      expect(consumed.acked.sort()).toEqual([...firstBatch].sort());
      expect((await deliveriesTo(bEndpoint))[0]!.status).toBe("delivered");

      // The rest drains in one Cron invocation's sweep, inside D1's limits (the guard counts every statement).
      const swept = await asInvocation(() => sweepOutbox(env));
      expect(swept.events).toBe(1_000 - 24);
      const [left] = await db()
        .select({ n: count() })
        .from(events)
        .where(and(inArray(events.agencyId, [a.agencyId]), isNull(events.enqueuedAt)));
      expect(left!.n, "only the poisoned row is left").toBe(1);
      const [made] = await db()
        .select({ n: count() })
        .from(webhookDeliveries)
        .where(
          and(
            inArray(webhookDeliveries.endpointId, aEndpoints),
            inArray(webhookDeliveries.eventId, sql`(SELECT value FROM json_each(${JSON.stringify(aEvents)}))`),
          ),
        );
      expect(made!.n, "one delivery per event and endpoint").toBe(aEvents.length * 16);
      expect(queue.sent).toHaveLength(aEvents.length * 16 + 1);
      expect(new Set(queue.sent).size, "one message per delivery").toBe(queue.sent.length);

      // After its last attempt the poisoned row is set aside with its error, and no drain takes it again.
      for (let attempt = 2; attempt <= MAX_FAN_OUT_ATTEMPTS; attempt++) {
        await db()
          .update(events)
          .set({ claimedUntil: new Date(Date.now() - 1).toISOString() })
          .where(eq(events.id, poisoned));
        expect(await drain()).toEqual({ events: 1, full: false, messages: 0, failed: 1 });
      }
      const setAside = (await eventRow(poisoned))!;
      expect(setAside).toMatchObject({ attempts: MAX_FAN_OUT_ATTEMPTS, enqueuedAt: null, claimedUntil: null });
      expect(setAside.setAsideAt).not.toBeNull();
      expect(setAside.lastError).toMatch(/JSON/);
      expect(await drain()).toEqual({ events: 0, full: false, messages: 0, failed: 0 });
      // Each failed attempt is an error for the operator, the last one saying the row was set aside.
      expect(logs.map((l) => [l.level, l.job, l.event_id, l.attempts, l.set_aside])).toEqual(
        Array.from({ length: MAX_FAN_OUT_ATTEMPTS }, (_, i) => [
          "error",
          "outbox_drain",
          poisoned,
          i + 1,
          i + 1 === MAX_FAN_OUT_ATTEMPTS,
        ]),
      );
      expect(logs.every((l) => /not valid JSON/.test(l.error))).toBe(true);
    },
  );

  it.each([
    ["hang past the timeout", "hang" as const],
    ["answer 503", 503],
  ])(
    "A's receivers %s: B's delivery still goes first, and A's failing endpoints are tried later",
    async (_, answer) => {
      const { bEndpoint, poisoned } = await burst();
      const logs = captureErrorLogs();
      await drain();
      expect(logs).toEqual([
        expect.objectContaining({ level: "error", job: "outbox_drain", event_id: poisoned, attempts: 1 }),
      ]);
      const [toB] = await deliveriesTo(bEndpoint);
      const firstBatch = queue.sent.slice(0, CONSUMER_BATCH);
      expect(firstBatch).toContain(toB!.id);

      const timeoutMs = 300;
      const network = receivers((url) => (url.includes("/a/") ? answer : "ok"));
      const started = performance.now();
      const one = await consumeBatch(firstBatch, { limits: { timeoutMs } });
      const bReceipt = network.received.find((r) => r.url.includes("/b/"));
      expect(bReceipt, "B's receiver got its delivery").toBeDefined();
      expect(bReceipt!.at - started, "B did not wait for A's receivers").toBeLessThan(timeoutMs);
      expect(one.acked).toEqual([toB!.id]);
      const aMessages = firstBatch.filter((id) => id !== toB!.id);
      expect([...one.retried.keys()].sort()).toEqual([...aMessages].sort());
      for (const delay of one.retried.values()) expect(delay).toBeGreaterThanOrEqual(30);

      // Every endpoint of A in the batch was tried and failed: at most ENDPOINT_IN_FLIGHT requests each (one
      // more may start while the first is still open), each one counted by its breaker.
      const aCalls = network.calls.filter((c) => c.url.includes("/a/"));
      const perUrl = Map.groupBy(aCalls, (c) => c.url);
      const aDeliveries = await db()
        .select({ endpointId: webhookDeliveries.endpointId })
        .from(webhookDeliveries)
        .where(inArray(webhookDeliveries.id, aMessages))
        .all();
      const inBatch = new Set(aDeliveries.map((d) => d.endpointId));
      expect(perUrl.size).toBe(inBatch.size);
      for (const calls of perUrl.values()) expect(calls.length).toBeLessThanOrEqual(ENDPOINT_IN_FLIGHT);
      const tried = await db()
        .select()
        .from(webhookEndpoints)
        .where(inArray(webhookEndpoints.id, [...inBatch]))
        .all();
      expect(tried.reduce((n, e) => n + e.consecutiveFailures, 0)).toBe(aCalls.length);
      // A hang opens the endpoint's breaker at once; answers that fail fast open it after BREAKER_FAILURES in a row.
      for (const e of tried) {
        expect(e.consecutiveFailures, JSON.stringify(e)).toBeGreaterThan(0);
        expect(e.pausedUntil !== null, JSON.stringify(e)).toBe(
          answer === "hang" || e.consecutiveFailures >= BREAKER_FAILURES,
        );
      }

      // The next batch: an endpoint that hung gets no request while its breaker is open.
      const secondBatch = queue.sent.slice(CONSUMER_BATCH, 2 * CONSUMER_BATCH);
      const callsBefore = network.calls.length;
      const two = await consumeBatch(secondBatch, { limits: { timeoutMs } });
      const hungUrls = new Set(network.calls.slice(0, callsBefore).map((c) => c.url));
      const again = network.calls.slice(callsBefore).filter((c) => hungUrls.has(c.url));
      if (answer === "hang") expect(again, "no request to a paused endpoint").toEqual([]);
      else {
        // Failing endpoints are tried after the healthy ones, one attempt each.
        const order = network.calls.slice(callsBefore).map((c) => hungUrls.has(c.url));
        expect(order.indexOf(true), JSON.stringify(order)).toBeGreaterThan(order.lastIndexOf(false));
        expect(again.length).toBe(new Set(again.map((c) => c.url)).size);
      }
      expect(two.acked).toEqual([]);
      expect(two.retried.size).toBe(secondBatch.length);
    },
  );

  it(
    "even queued behind a whole burst to hanging receivers, B's delivery waits for at most a few " + "timeouts",
    async () => {
      // The worst case for the queue: A's 10 events were drained (160 messages) before B's event existed.
      const a = await makeTenant();
      const b = await makeTenant();
      await registerEndpoints(a, 16, "a");
      const [bEndpoint] = await registerEndpoints(b, 1, "b", ["listing.created"]);
      await emptyOutbox();
      queue.sent.length = 0;
      await insertEvents(a.agencyId, 10, { firstCreatedAt: Date.now() - 60_000 });
      await drain();
      await insertEvents(b.agencyId, 1, { firstCreatedAt: Date.now() });
      await drain();
      const [toB] = await deliveriesTo(bEndpoint!);
      expect(queue.sent.indexOf(toB!.id)).toBe(160);

      const timeoutMs = 250;
      const network = receivers((url) => (url.includes("/a/") ? "hang" : "ok"));
      let waited = 0;
      let batches = 0;
      const settled = new Set<string>();
      for (let i = 0; i < queue.sent.length && !network.received.length; i += CONSUMER_BATCH) {
        const ids = queue.sent.slice(i, i + CONSUMER_BATCH);
        const result = await consumeBatch(ids, { limits: { timeoutMs } });
        for (const id of [...result.acked, ...result.retried.keys()]) settled.add(id);
        batches++;
        if (result.ms >= timeoutMs) waited++;
      }
      expect(network.received.map((r) => r.url)).toEqual(["http://localhost:9999/b/0"]);
      expect(batches).toBe(Math.ceil(161 / CONSUMER_BATCH));
      const aAttempts = network.calls.filter((c) => c.url.includes("/a/")).length;
      // Each hanging endpoint costs one timeout (its requests open together, at most ENDPOINT_IN_FLIGHT); its
      // breaker then holds its other messages without a request.
      expect(aAttempts, `A's receivers were called ${aAttempts} times before B's delivery`).toBeLessThanOrEqual(
        16 * ENDPOINT_IN_FLIGHT,
      );
      expect(waited, `${waited} of ${batches} batches waited for a timeout`).toBeLessThanOrEqual(3);
      expect(settled.size, "every message was acked or retried, none left unsettled").toBe(161);
    },
  );
});

describe("one consumer batch", () => {
  it("holds at most 6 requests open, at most 2 to one endpoint", async () => {
    const t = await makeTenant();
    await registerEndpoints(t, 4, "busy");
    await emptyOutbox();
    queue.sent.length = 0;
    await insertEvents(t.agencyId, 5, { firstCreatedAt: Date.now() - 1_000 });
    await drain();
    expect(queue.sent).toHaveLength(20);
    const network = receivers(() => ({ afterMs: 30 }));
    const consumed = await consumeBatch(queue.sent);
    expect(consumed.acked).toHaveLength(20);
    expect(network.most).toEqual({ overall: CONNECTIONS_PER_BATCH, perUrl: ENDPOINT_IN_FLIGHT });
  });

  it(
    "ends within its start window and one timeout: attempts that cannot start in time wait for a " + "later batch",
    async () => {
      const t = await makeTenant();
      await registerEndpoints(t, 1, "slow");
      await emptyOutbox();
      queue.sent.length = 0;
      await insertEvents(t.agencyId, 10, { firstCreatedAt: Date.now() - 1_000 });
      await drain();
      receivers(() => ({ afterMs: 100 }));
      const consumed = await consumeBatch(queue.sent, { limits: { startWindowMs: 150, timeoutMs: 1_000 } });
      // Two at a time: two start at once, two more after 100 ms; the rest would start after the window.
      expect(consumed.acked.length, JSON.stringify(consumed)).toBeGreaterThanOrEqual(2);
      expect(consumed.acked.length).toBeLessThanOrEqual(6);
      expect(consumed.acked.length + consumed.retried.size).toBe(10);
      for (const delay of consumed.retried.values()) expect(delay).toBe(30);
      expect(consumed.ms).toBeLessThan(150 + 1_000);
    },
  );
});

/** The events of these agencies that a drain has sent. */
async function sentOf(agencies: string[]) {
  const rows = await db()
    .select({ id: events.id, agencyId: events.agencyId, enqueuedAt: events.enqueuedAt })
    .from(events)
    .where(inArray(events.agencyId, agencies))
    .all();
  return rows.filter((r) => r.enqueuedAt !== null);
}

describe("the claim", () => {
  it("takes turns across agencies, oldest first within each, at most 25 of one agency", async () => {
    await emptyOutbox();
    const t0 = Date.now() - 600_000;
    const big = await insertEvents("agy_turns_big", 100, { firstCreatedAt: t0 });
    const small = await insertEvents("agy_turns_small", 3, { firstCreatedAt: t0 + 10_000 });
    const late = await insertEvents("agy_turns_late", 1, { firstCreatedAt: t0 + 20_000 });
    expect(await drain()).toMatchObject({ events: AGENCY_EVENTS_PER_PAGE + 3 + 1 });
    const sent = new Set((await sentOf(["agy_turns_big", "agy_turns_small", "agy_turns_late"])).map((r) => r.id));
    expect(big.filter((id) => sent.has(id))).toEqual(big.slice(0, AGENCY_EVENTS_PER_PAGE));
    expect([...small, ...late].filter((id) => !sent.has(id))).toEqual([]);
  });

  it("seeks through the events_unsent index and never scans the outbox", async () => {
    const plan = await db().all<{ detail: string }>(sql`EXPLAIN QUERY PLAN ${claimStatement(Date.now(), "agy_m")}`);
    const onEvents = plan.map((p) => p.detail).filter((d) => / events\b| u\b| e\b/.test(d));
    expect(onEvents.length, JSON.stringify(plan)).toBeGreaterThan(0);
    for (const step of onEvents)
      expect(step, JSON.stringify(plan)).toMatch(
        /^SEARCH (events|u|e) USING (COVERING )?INDEX (events_unsent|sqlite_autoindex_events_1) \(/,
      );
  });

  it(
    "with more agencies waiting than a page has room for, each next page starts where the last one " + "ended",
    async () => {
      await emptyOutbox();
      const agencies = Array.from({ length: 70 }, (_, i) => `agy_many_${String(i).padStart(3, "0")}`);
      const t0 = Date.now() - 600_000;
      for (const [i, agency] of agencies.entries()) await insertEvents(agency, 3, { firstCreatedAt: t0 + i });
      const turns = async () => {
        const sent = await sentOf(agencies);
        return agencies.map((a) => sent.filter((r) => r.agencyId === a).length);
      };
      expect(await drain()).toMatchObject({ events: PAGE_EVENTS });
      expect(
        (await turns()).filter((n) => n === 1),
        "one turn each",
      ).toHaveLength(PAGE_EVENTS);
      expect(await drain()).toMatchObject({ events: PAGE_EVENTS });
      expect(Math.min(...(await turns())), "every agency has had a turn within two pages").toBe(1);
      expect(await drain()).toMatchObject({ events: PAGE_EVENTS });
      expect(Math.min(...(await turns())), "and a second one within three").toBe(2);
    },
  );
});
