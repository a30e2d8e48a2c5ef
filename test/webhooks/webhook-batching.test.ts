import { env } from "cloudflare:workers";
import { eq, inArray, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints } from "../../src/db/schema";
import { ENDPOINT_IN_FLIGHT } from "../../src/webhooks/delivery/limits";
import { BREAKER_FIRST_PAUSE_SECONDS } from "../../src/webhooks/endpoints/breakers";
import { drainOutbox } from "../../src/webhooks/outbox/drain";
import { backgroundDrainDone, DRAIN_SPACING_MS, kickOutbox } from "../../src/webhooks/outbox/kick";
import { asInvocation } from "../support/d1-guard";
import { db, makeTenant } from "../support/harness";
import {
  type Answer,
  captureQueue,
  consumeBatch,
  countD1,
  emptyOutbox,
  failD1,
  insertEvents,
  receivers,
  registerEndpoints,
} from "../support/webhook-fixtures";
import { settle } from "../support/webhook-harness";

let queue: ReturnType<typeof captureQueue>;
let network: ReturnType<typeof receivers>;
let answer: (url: string) => Answer = () => "ok";
beforeEach(() => {
  answer = () => "ok";
  queue = captureQueue();
  network = receivers((url) => answer(url));
});
afterEach(() => vi.restoreAllMocks());

const among = (ids: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;
const rows = (ids: string[]) =>
  db()
    .select()
    .from(webhookDeliveries)
    .where(inArray(webhookDeliveries.id, among(ids)))
    .all();
const attemptRows = (ids: string[]) =>
  db()
    .select()
    .from(webhookDeliveryAttempts)
    .where(inArray(webhookDeliveryAttempts.deliveryId, among(ids)))
    .all();
const endpointRow = async (id: string) =>
  (await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)).get())!;

/** `events` listing.created events of a new agency with `endpoints` receivers, drained: one message per delivery. */
async function deliveries(endpoints: number, events: number) {
  const t = await makeTenant();
  const hooks = await registerEndpoints(t, endpoints, `b${Math.random().toString(36).slice(2, 8)}`);
  await emptyOutbox();
  await settle();
  queue.sent.length = 0;
  await insertEvents(t.agencyId, events, { firstCreatedAt: Date.now() - 1_000 });
  await asInvocation(() => drainOutbox(env));
  expect(queue.sent).toHaveLength(endpoints * events);
  return { hooks, ids: [...queue.sent] };
}

describe("a consumer batch's D1 work", () => {
  it("60 deliveries to 10 endpoints: one round trip leases and loads them all; outcomes go in groups", async () => {
    const { ids } = await deliveries(10, 6);
    const d1 = countD1();
    const consumed = await consumeBatch(ids);
    const [statements, roundTrips] = [d1.statements(), d1.roundTrips()];
    const [leases, eventReads, attemptWrites] = [
      d1.matching(/^update "webhook_deliveries" set "leased_until"/i),
      d1.matching(/from "events"/i),
      d1.matching(/^insert into "webhook_delivery_attempts"/i),
    ];
    d1.stop();
    expect(consumed.acked.sort(), JSON.stringify([...consumed.retried])).toEqual([...ids].sort());
    expect(network.received).toHaveLength(ids.length);
    expect(leases, "one lease statement for the whole batch").toBe(1);
    expect(eventReads, "the events are read once, with the lease").toBe(1);
    // Each group is one round trip of at most four statements; groups hold whatever ended together.
    expect(attemptWrites).toBeGreaterThanOrEqual(1);
    expect(roundTrips, `${roundTrips} round trips, ${attemptWrites} groups`).toBe(1 + attemptWrites);
    expect(statements, `${statements} statements`).toBeLessThanOrEqual(3 + 4 * attemptWrites);
    expect(roundTrips, "far fewer round trips than deliveries").toBeLessThanOrEqual(ids.length / 3);
    const written = await rows(ids);
    expect(written.every((d) => d.status === "delivered" && d.attempts === 1 && d.leasedUntil === null)).toBe(true);
    const log = await attemptRows(ids);
    expect(log, "one attempt each").toHaveLength(ids.length);
    expect(new Set(log.map((a) => a.deliveryId)).size).toBe(ids.length);
  });

  it("each delivery is leased once: its copies, in the batch or in another batch at once, send nothing", async () => {
    const { ids } = await deliveries(10, 3);
    answer = () => ({ afterMs: 50 });
    const [a, b] = await Promise.all([consumeBatch([...ids, ...ids]), consumeBatch(ids)]);
    expect(network.calls, "one request per delivery").toHaveLength(ids.length);
    expect(new Set([...a.acked, ...b.acked]), "every delivery acked").toEqual(new Set(ids));
    for (const delay of [...a.retried.values(), ...b.retried.values()])
      expect(delay, "a copy waits at least for the lease").toBeGreaterThanOrEqual(30);
    expect(await attemptRows(ids)).toHaveLength(ids.length);
    expect((await rows(ids)).every((d) => d.status === "delivered" && d.attempts === 1)).toBe(true);
  });

  it("deliveries leased but not attempted are freed, so their retry is not held by the lease", async () => {
    const { hooks, ids } = await deliveries(2, 10);
    // The first endpoint's receiver is slow: few of its attempts start inside the window. The second one fails.
    answer = (url) => (url.endsWith("/0") ? { afterMs: 100 } : 503);
    const first = await consumeBatch(ids, { limits: { startWindowMs: 150, timeoutMs: 1_000 } });
    const putBack = [...first.retried.keys()];
    expect(first.acked.length + putBack.length).toBe(ids.length);
    expect(putBack.length, JSON.stringify(first)).toBeGreaterThan(10);
    const held = (await rows(putBack)).filter((d) => d.leasedUntil !== null);
    expect(held, "no retried delivery still leased").toEqual([]);

    answer = () => "ok";
    await db().update(webhookEndpoints).set({ pausedUntil: null }).where(eq(webhookEndpoints.id, hooks[1]!));
    const second = await consumeBatch(putBack, { attempts: 2 });
    expect(second.acked.sort(), JSON.stringify([...second.retried])).toEqual([...putBack].sort());
  });

  it("a group of outcomes D1 refuses is written again one by one: each recorded once, all acked", async () => {
    const { ids } = await deliveries(4, 5);
    failD1(/^insert into "webhook_delivery_attempts"/i, 1);
    const consumed = await consumeBatch(ids);
    expect(consumed.acked.sort(), JSON.stringify([...consumed.retried])).toEqual([...ids].sort());
    expect(network.calls).toHaveLength(ids.length);
    const log = await attemptRows(ids);
    expect(log).toHaveLength(ids.length);
    expect(new Set(log.map((a) => a.deliveryId)).size).toBe(ids.length);
  });

  it("failures written together count one by one: the third in a row opens the breaker", async () => {
    const { hooks, ids } = await deliveries(1, 4);
    const [endpoint] = hooks;
    answer = () => ({ afterMs: 30, status: 503 });
    const first = await consumeBatch(ids);
    expect(network.calls, "both attempts in flight failed").toHaveLength(ENDPOINT_IN_FLIGHT);
    expect(first.retried.size).toBe(ids.length);
    expect(await endpointRow(endpoint!)).toMatchObject({ consecutiveFailures: 2, pausedUntil: null });

    const second = await consumeBatch(ids, { attempts: 2 });
    expect(network.calls, "a failing endpoint gets one probe").toHaveLength(ENDPOINT_IN_FLIGHT + 1);
    expect(second.retried.size).toBe(ids.length);
    const paused = await endpointRow(endpoint!);
    expect(paused.consecutiveFailures).toBe(3);
    const pause = Date.parse(paused.pausedUntil!) - Date.now();
    // The pause doubles per failure in a row before the one that opened it: 30 s << 2.
    expect(pause).toBeGreaterThan((BREAKER_FIRST_PAUSE_SECONDS * 4 - 10) * 1000);
    expect(pause).toBeLessThanOrEqual(BREAKER_FIRST_PAUSE_SECONDS * 4 * 1000);

    await db().update(webhookEndpoints).set({ pausedUntil: null }).where(eq(webhookEndpoints.id, endpoint!));
    answer = () => "ok";
    const third = await consumeBatch(ids, { attempts: 3 });
    expect(third.acked.length).toBeGreaterThanOrEqual(1);
    expect(await endpointRow(endpoint!)).toMatchObject({ consecutiveFailures: 0, pausedUntil: null });
  });
});

describe("the drain after writes", () => {
  it("twenty kicks at once in one isolate make two drains at most, which send every event", async () => {
    const t = await makeTenant();
    await registerEndpoints(t, 2, `k${Math.random().toString(36).slice(2, 8)}`);
    await emptyOutbox();
    await settle();
    queue.sent.length = 0;
    const d1 = countD1();
    const waiting: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => void waiting.push(p) };
    await insertEvents(t.agencyId, 20, { firstCreatedAt: Date.now() - 1_000 });
    // Twenty writes that each kick the drain as they answer.
    for (let i = 0; i < 20; i++) kickOutbox(env, ctx);
    await Promise.all(waiting);
    await backgroundDrainDone();
    const claims = d1.matching(/UPDATE events SET claimed_until/i);
    d1.stop();
    expect(waiting).toHaveLength(20);
    expect(claims).toBeGreaterThanOrEqual(1);
    expect(claims).toBeLessThanOrEqual(2);
    expect(queue.sent).toHaveLength(2 * 20);
  });

  it("the next drain starts no sooner than the spacing after the last one began", async () => {
    const t = await makeTenant();
    await registerEndpoints(t, 1, `s${Math.random().toString(36).slice(2, 8)}`);
    await emptyOutbox();
    await settle();
    const claimedAt: number[] = [];
    const prepare = Object.getPrototypeOf(env.DB).prepare as D1Database["prepare"];
    vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
      if (/UPDATE events SET claimed_until/i.test(query)) claimedAt.push(Date.now());
      return prepare.call(env.DB, query);
    });
    for (let i = 0; i < 3; i++) {
      await insertEvents(t.agencyId, 1, { firstCreatedAt: Date.now() - 1_000 });
      kickOutbox(env, { waitUntil: () => undefined });
      await backgroundDrainDone();
    }
    expect(claimedAt).toHaveLength(3);
    // The spacing runs from each drain's beginning; a claim is prepared a few milliseconds into its drain, and
    // that lead varies with the machine's load, so the claims are held to the spacing less that jitter (a drain
    // started without waiting would claim within a few milliseconds of the last).
    const JITTER_MS = 10;
    for (let i = 1; i < claimedAt.length; i++)
      expect(claimedAt[i]! - claimedAt[i - 1]!).toBeGreaterThanOrEqual(DRAIN_SPACING_MS - JITTER_MS);
  });
});
