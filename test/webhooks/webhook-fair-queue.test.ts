import { env } from "cloudflare:workers";
import { eq, inArray } from "drizzle-orm";
import { afterEach, expect, it, vi } from "vitest";
import { webhookDeliveries, webhookEndpoints } from "../../src/db/schema";
import { DELIVERY_TIMEOUT_MS, ENDPOINT_IN_FLIGHT } from "../../src/webhooks/delivery/limits";
import { db, makeListing, makeTenant, mockFetch } from "../support/harness";
import { captureQueue, emptyOutbox, registerEndpoints } from "../support/webhook-fixtures";
import { settle } from "../support/webhook-harness";

afterEach(() => vi.restoreAllMocks());

/** How long the test waits for A's held attempts to be recorded once their receivers answer. */
const SETTLE_MS = 5_000;

it("through the Worker's own queue, B's event is delivered while the batches before it still wait on A's receivers", async () => {
  const queue = captureQueue();
  const a = await makeTenant();
  const b = await makeTenant();
  const aEndpoints = await registerEndpoints(a, 16, "a");
  const [bEndpoint] = await registerEndpoints(b, 1, "b", ["listing.created"]);
  await emptyOutbox();
  await settle();
  queue.sent.length = 0;
  for (let i = 0; i < 2; i++) await makeListing(a);
  await makeListing(b);
  await settle();
  // In the order the drains sent them: each of A's events to its 16 endpoints, then B's.
  const rows = await db().select().from(webhookDeliveries).where(inArray(webhookDeliveries.id, queue.sent)).all();
  const endpointOf = new Map(rows.map((d) => [d.id, d.endpointId]));
  const toA = queue.sent.filter((id) => endpointOf.get(id) !== bEndpoint);
  const toB = queue.sent.filter((id) => endpointOf.get(id) === bEndpoint);
  expect(toA).toHaveLength(2 * 16);
  expect(toB).toHaveLength(1);
  expect(new Set(toA.slice(0, 16).map((id) => endpointOf.get(id))).size, "the first event's 16 messages first").toBe(
    16,
  );
  // From here the messages go through the local queue to the Worker's queue handler, batch after batch.
  queue.sendBatch.mockRestore();

  // A's receivers hold every request until B's has answered, then answer 503. A service that made B wait for
  // them would reach B only once A's attempts timed out: each one's end, answer or abort, is noted.
  const aCalls: number[] = [];
  const aUrls: string[] = [];
  const aAnswered: number[] = [];
  let bAt = 0;
  let releaseA!: () => void;
  const aReleased = new Promise<void>((resolve) => {
    releaseA = resolve;
  });
  mockFetch(async (req, init) => {
    if (req.url.includes("/b/")) {
      bAt = performance.now();
      return new Response("ok");
    }
    aCalls.push(performance.now());
    aUrls.push(req.url);
    const aborted = new Promise<never>((_, reject) => {
      init?.signal?.addEventListener("abort", () => reject(init.signal!.reason));
    });
    aborted.catch(() => undefined);
    await Promise.race([aReleased, aborted]).finally(() => aAnswered.push(performance.now()));
    return new Response("held", { status: 503 });
  });
  const sent = performance.now();
  await env.WEBHOOK_QUEUE.sendBatch(toA.map((id) => ({ body: { delivery_id: id } })));
  await env.WEBHOOK_QUEUE.sendBatch(toB.map((id) => ({ body: { delivery_id: id } })));
  await vi.waitFor(() => expect(bAt, "B's receiver got its delivery").toBeGreaterThan(0), {
    timeout: DELIVERY_TIMEOUT_MS * 2,
    interval: 50,
  });
  expect(aCalls.length, "A's receivers were reached first").toBeGreaterThan(0);
  expect(aAnswered, `B after ${Math.round(bAt - sent)} ms, before any of A's attempts ended`).toEqual([]);
  releaseA();

  // The attempts at A's receivers end in the background and are recorded; their endpoints hold no lease.
  await vi.waitFor(
    async () => {
      expect(aAnswered.length).toBe(aCalls.length);
      const rows = await db().select().from(webhookDeliveries).where(inArray(webhookDeliveries.id, toA)).all();
      const tried = rows.filter((d) => d.attempts > 0);
      expect(tried.length).toBe(aCalls.length);
      expect(tried.every((d) => d.lastResponseStatus === 503 && d.leasedUntil === null)).toBe(true);
    },
    { timeout: SETTLE_MS, interval: 50 },
  );
  // A hanging endpoint costs its own requests only: at most ENDPOINT_IN_FLIGHT of them, opened together in one batch.
  for (const [url, calls] of Map.groupBy(aUrls, (u) => u))
    expect(calls.length, `requests to ${url}`).toBeLessThanOrEqual(ENDPOINT_IN_FLIGHT);
  const [bRow] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.id, toB[0]!)).all();
  expect(bRow!.status).toBe("delivered");
  const endpoints = await db().select().from(webhookEndpoints).where(inArray(webhookEndpoints.id, aEndpoints)).all();
  expect(endpoints.reduce((n, e) => n + e.consecutiveFailures, 0)).toBe(aCalls.length);
  // A's messages come back past the lease, after this test: settled now, they are acked then without a request.
  await db().update(webhookDeliveries).set({ status: "dead" }).where(inArray(webhookDeliveries.id, toA));
}, 40_000);
