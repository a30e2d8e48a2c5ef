import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { verify } from "@octokit/webhooks-methods";
import { and, count, eq, inArray, isNull } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints } from "../../src/db/schema";
import { outboxInsert } from "../../src/domain/events/outbox";
import { consumeWebhooks } from "../../src/webhooks/delivery/batch";
import { retryDelay } from "../../src/webhooks/delivery/retry-schedule";
import { drainOutbox } from "../../src/webhooks/outbox/drain";
import { call, captureErrorLogs, db, internal, makeListing, makeTenant, mockFetch } from "../support/harness";

/** Each message carries a child span of the trace of the request that wrote its event. */
const TRACEPARENT = /^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/;

import { consume, cron, drained, registerEndpoint, settle } from "../support/webhook-harness";

let sent: { delivery_id: string }[] = [];
let received: { url: string; headers: Headers; body: string }[] = [];
let answer: () => Response = () => new Response("ok");

async function capture(messages: Iterable<MessageSendRequest<unknown>>): Promise<QueueSendBatchResponse> {
  for (const m of messages) sent.push(m.body as { delivery_id: string });
  return {} as QueueSendBatchResponse;
}

beforeEach(() => {
  sent = [];
  received = [];
  answer = () => new Response("ok");
  // Capture the queue's messages, so each test drives the consumer itself.
  vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockImplementation(capture);
  vi.spyOn(env.WEBHOOK_QUEUE, "send").mockImplementation(async (body) => {
    sent.push(body as { delivery_id: string });
    return {} as QueueSendResponse;
  });
  mockFetch(async (req) => {
    received.push({ url: req.url, headers: req.headers, body: await req.text() });
    return answer();
  });
});
afterEach(() => vi.restoreAllMocks());

/** Events written straight to the outbox, as a change would, without a request that drains them. */
async function writeEvents(agencyId: string, n: number) {
  const d = db();
  const inserts = Array.from({ length: n }, (_, i) =>
    outboxInsert(d, agencyId, "user.deactivated", { user_id: `usr_${i}`, reason: "deactivated" }),
  );
  for (let i = 0; i < inserts.length; i += 50) {
    const [first, ...rest] = inserts.slice(i, i + 50);
    await d.batch([first!, ...rest]);
  }
}

const deliveriesOf = (endpointId: string) =>
  db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId)).all();

describe("delivery", () => {
  it("a listing.created reaches the receiver signed over the raw body, with the envelope and headers", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/hooks", ["listing.created"]);
    const listing = await makeListing(t);
    await drained();
    const [delivery] = await deliveriesOf(hook.id);
    expect(delivery).toMatchObject({ status: "pending" });
    expect(sent).toContainEqual({ delivery_id: delivery!.id, traceparent: expect.stringMatching(TRACEPARENT) });

    const result = await consume("alms-webhooks-local", [{ delivery_id: delivery!.id }]);
    expect(result.explicitAcks).toEqual(["m0"]);
    expect(received).toHaveLength(1);
    const [req] = received;
    expect(req!.url).toBe("http://localhost:9999/hooks");
    const signature = req!.headers.get("X-Webhook-Signature")!;
    expect(await verify(hook.signing_secret, req!.body, signature)).toBe(true);
    const envelope = JSON.parse(req!.body);
    expect(envelope).toMatchObject({
      event_type: "listing.created",
      api_version: "2026-11-01",
      data: { listing_number: listing.listing_number, status: "Coming Soon" },
    });
    expect(envelope.event_id).toMatch(/^evt_/);
    expect(Math.abs(envelope.timestamp - Date.now() / 1000)).toBeLessThan(60);
    expect(req!.headers.get("X-Webhook-Event")).toBe("listing.created");
    expect(req!.headers.get("X-Webhook-Id")).toBe(envelope.event_id);
    expect(req!.headers.get("X-Webhook-Delivery")).toBe(delivery!.id);
    expect((await deliveriesOf(hook.id))[0]).toMatchObject({
      status: "delivered",
      attempts: 1,
      lastResponseStatus: 200,
    });
  });

  it("delivers only subscribed types, only to the event's agency; a repeated drain adds nothing", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const cancelledOnly = await registerEndpoint(a, "http://localhost:9999/cancelled", ["listing.cancelled"]);
    const everything = await registerEndpoint(a, "http://localhost:9999/all");
    const otherAgency = await registerEndpoint(b, "http://localhost:9999/b");
    await makeListing(a);
    await drained();
    await drained();
    const listingCreated = (await db().select().from(events).where(eq(events.agencyId, a.agencyId)).all()).filter(
      (e) => e.eventType === "listing.created",
    );
    expect(listingCreated).toHaveLength(1);
    expect(await deliveriesOf(cancelledOnly.id)).toEqual([]);
    const toEverything = await deliveriesOf(everything.id);
    expect(toEverything.filter((d) => d.eventId === listingCreated[0]!.id)).toHaveLength(1);
    expect(new Set(toEverything.map((d) => d.eventId)).size).toBe(toEverything.length);
    const aEvents = new Set(
      (await db().select().from(events).where(eq(events.agencyId, a.agencyId)).all()).map((e) => e.id),
    );
    expect((await deliveriesOf(otherAgency.id)).filter((d) => aEvents.has(d.eventId))).toEqual([]);
  });

  it("user.hierarchy_changed goes to the new owning agency", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const hookA = await registerEndpoint(a, "http://localhost:9999/a", ["user.hierarchy_changed"]);
    const hookB = await registerEndpoint(b, "http://localhost:9999/b", ["user.hierarchy_changed"]);
    await internal(`/internal/v1/users/${a.agent.id}/manager`, { method: "PATCH", body: { manager_id: b.owner.id } });
    await drained();
    expect(await deliveriesOf(hookA.id)).toEqual([]);
    expect(await deliveriesOf(hookB.id)).toHaveLength(1);
  });

  it("a failed enqueue loses nothing: the event stays in the outbox for the next drain", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/hooks", ["listing.created"]);
    vi.mocked(env.WEBHOOK_QUEUE.sendBatch).mockRejectedValue(new Error("queue down"));
    const logs = captureErrorLogs();
    const listing = await makeListing(t);
    await settle();
    await expect(drainOutbox(env)).rejects.toThrow("queue down");
    // The drain that follows the request runs in the background: its failure is logged.
    const queueDown = {
      console: "error",
      level: "error",
      message: "outbox drain failed",
      job: "outbox_drain",
      error: "Error: queue down",
    };
    await vi.waitFor(() => expect(logs).toContainEqual(queueDown));
    expect(logs.filter((l) => l.error !== queueDown.error)).toEqual([]);
    vi.mocked(env.WEBHOOK_QUEUE.sendBatch).mockImplementation(capture);
    const created = (await db().select().from(events).where(eq(events.agencyId, t.agencyId)).all()).find(
      (e) => e.eventType === "listing.created",
    );
    expect(created!.enqueuedAt).toBeNull();
    expect(created!.claimedUntil, "a failed send releases its claim at once").toBeNull();
    await cron("* * * * *");
    const [delivery] = await deliveriesOf(hook.id);
    expect(sent).toContainEqual({ delivery_id: delivery!.id, traceparent: expect.stringMatching(TRACEPARENT) });
    expect((await db().select().from(events).where(eq(events.id, created!.id)).get())!.enqueuedAt).not.toBeNull();
    expect(listing.listing_number).toMatch(/^[a-z0-9]{7}$/);
  });
});

describe("draining the outbox", () => {
  it("concurrent drains claim each event once: one message per delivery", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/once", ["user.deactivated"]);
    await settle();
    sent = [];
    await writeEvents(t.agencyId, 30);
    const results = await Promise.all([drainOutbox(env), drainOutbox(env), drainOutbox(env)]);
    expect(
      results.reduce((n, r) => n + r.events, 0),
      JSON.stringify(results),
    ).toBe(30);
    const deliveries = await deliveriesOf(hook.id);
    expect(deliveries).toHaveLength(30);
    const ids = sent.map((m) => m.delivery_id).filter((id) => deliveries.some((d) => d.id === id));
    expect(ids.sort()).toEqual(deliveries.map((d) => d.id).sort());
  });

  it("an event claimed by a drain that died waits for the claim to expire, then goes out", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/claimed", ["user.deactivated"]);
    await settle();
    await writeEvents(t.agencyId, 1);
    const [event] = await db()
      .select()
      .from(events)
      .where(and(eq(events.agencyId, t.agencyId), eq(events.eventType, "user.deactivated")))
      .all();
    await db()
      .update(events)
      .set({ claimedUntil: new Date(Date.now() + 60_000).toISOString() })
      .where(eq(events.id, event!.id));
    await drainOutbox(env);
    expect(await deliveriesOf(hook.id)).toEqual([]);
    await db()
      .update(events)
      .set({ claimedUntil: new Date(Date.now() - 1_000).toISOString() })
      .where(eq(events.id, event!.id));
    await drainOutbox(env);
    const [delivery] = await deliveriesOf(hook.id);
    expect(delivery?.eventId).toBe(event!.id);
    expect(sent).toContainEqual({ delivery_id: delivery!.id });
  });

  it("the every-minute sweep drains a backlog larger than one drain", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/backlog", ["user.deactivated"]);
    await settle();
    await writeEvents(t.agencyId, 230);
    await cron("* * * * *");
    const [left] = await db()
      .select({ n: count() })
      .from(events)
      .where(and(eq(events.agencyId, t.agencyId), isNull(events.enqueuedAt)));
    expect(left!.n).toBe(0);
    expect(await deliveriesOf(hook.id)).toHaveLength(230);
  });

  it("the nightly and reconciliation schedules do not replace the sweep", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/nightly", ["user.deactivated"]);
    await settle();
    await writeEvents(t.agencyId, 1);
    await cron("0 3 * * *");
    expect(await deliveriesOf(hook.id)).toEqual([]);
    await cron("* * * * *");
    expect(await deliveriesOf(hook.id)).toHaveLength(1);
  });
});

describe("retries and dead letters", () => {
  it("a failing receiver is retried with exponential backoff; every attempt is recorded", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/flaky", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [delivery] = await deliveriesOf(hook.id);
    answer = () => new Response("nope", { status: 500 });
    const first = await consume("alms-webhooks-local", [{ delivery_id: delivery!.id, attempts: 1 }]);
    expect(first.retryMessages).toEqual([{ msgId: "m0" }]);
    // The delay asked of the queue, seen on a message of our own.
    const retry = vi.fn();
    const message = {
      id: "m1",
      timestamp: new Date(),
      attempts: 3,
      body: { delivery_id: delivery!.id },
      retry,
      ack: vi.fn(),
    };
    await consumeWebhooks(
      { queue: "alms-webhooks-local", messages: [message], ackAll() {}, retryAll() {} } as unknown as MessageBatch<{
        delivery_id: string;
      }>,
      env,
      createExecutionContext(),
    );
    expect(retry).toHaveBeenCalledWith({ delaySeconds: 120 });
    const nonces = received.map((r) => JSON.parse(r.body).nonce);
    expect(new Set(nonces).size).toBe(2);
    expect(new Set(received.map((r) => JSON.parse(r.body).event_id)).size).toBe(1);
    answer = () => new Response(null, { status: 204 });
    const last = await consume("alms-webhooks-local", [{ delivery_id: delivery!.id, attempts: 4 }]);
    expect(last.explicitAcks).toEqual(["m0"]);
    const attempts = await db()
      .select()
      .from(webhookDeliveryAttempts)
      .where(eq(webhookDeliveryAttempts.deliveryId, delivery!.id))
      .all();
    expect(attempts.map((a) => [a.attempt, a.responseStatus])).toEqual([
      [1, 500],
      [2, 500],
      [3, 204],
    ]);
    expect(attempts.every((a) => a.latencyMs >= 0)).toBe(true);
    expect(attempts[0]!.error).toBe("receiver answered 500");
    expect((await deliveriesOf(hook.id))[0]).toMatchObject({ status: "delivered", attempts: 3 });
  });

  it("the schedule doubles from 30 s, caps at 12 h, and spans about three days over 16 attempts", () => {
    const delays = Array.from({ length: 15 }, (_, i) => retryDelay(i + 1));
    expect(delays.slice(0, 4)).toEqual([30, 60, 120, 240]);
    expect(Math.max(...delays)).toBe(12 * 3600);
    const hours = delays.reduce((a, b) => a + b, 0) / 3600;
    expect(hours).toBeGreaterThan(60);
    expect(hours).toBeLessThan(80);
  });

  it("the dead-letter consumer marks the delivery dead", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/dead", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [delivery] = await deliveriesOf(hook.id);
    const result = await consume("alms-webhooks-dlq-local", [{ delivery_id: delivery!.id }]);
    expect(result.explicitAcks).toEqual(["m0"]);
    expect((await deliveriesOf(hook.id))[0]!.status).toBe("dead");
    await consume("alms-webhooks-local", [{ delivery_id: delivery!.id }]);
    expect(received).toEqual([]);
  });

  it("a failure of our own retries that message alone, on the same schedule", async () => {
    const t = await makeTenant();
    const good = await registerEndpoint(t, "http://localhost:9999/good", ["listing.created"]);
    const broken = await registerEndpoint(t, "http://localhost:9999/broken", ["listing.created"]);
    await makeListing(t);
    await drained();
    await db()
      .update(webhookEndpoints)
      .set({ secretSealed: "not-a-sealed-secret" })
      .where(eq(webhookEndpoints.id, broken.id));
    const [toGood] = await deliveriesOf(good.id);
    const [toBroken] = await deliveriesOf(broken.id);
    const retry = vi.fn();
    const ack = vi.fn();
    const logs = captureErrorLogs();
    const messages = [
      { id: "b", timestamp: new Date(), attempts: 2, body: { delivery_id: toBroken!.id }, retry, ack },
      { id: "g", timestamp: new Date(), attempts: 1, body: { delivery_id: toGood!.id }, retry: vi.fn(), ack },
    ];
    await consumeWebhooks(
      { queue: "alms-webhooks-local", messages, ackAll() {}, retryAll() {} } as unknown as MessageBatch<{
        delivery_id: string;
      }>,
      env,
      createExecutionContext(),
    );
    expect(retry).toHaveBeenCalledWith({ delaySeconds: retryDelay(2) });
    expect(ack).toHaveBeenCalledTimes(1);
    expect(logs).toEqual([
      expect.objectContaining({
        level: "error",
        job: "webhook_delivery",
        delivery_id: toBroken!.id,
        attempt: 2,
        error: expect.stringContaining(`signing secret of webhook endpoint ${broken.id} does not open`),
      }),
    ]);
    expect(received.map((r) => r.url)).toEqual(["http://localhost:9999/good"]);
    expect((await deliveriesOf(good.id))[0]!.status).toBe("delivered");
    expect((await deliveriesOf(broken.id))[0]!.status).toBe("pending");
  });

  it("signing secrets swapped between two endpoints' rows fail closed: logged, retried, never sent", async () => {
    const t = await makeTenant();
    const one = await registerEndpoint(t, "http://localhost:9999/one", ["listing.created"]);
    const two = await registerEndpoint(t, "http://localhost:9999/two", ["listing.created"]);
    await makeListing(t);
    await drained();
    const sealedOf = async (id: string) =>
      (await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, id)).get())!.secretSealed;
    const [sealedOne, sealedTwo] = [await sealedOf(one.id), await sealedOf(two.id)];
    await db().update(webhookEndpoints).set({ secretSealed: sealedTwo }).where(eq(webhookEndpoints.id, one.id));
    await db().update(webhookEndpoints).set({ secretSealed: sealedOne }).where(eq(webhookEndpoints.id, two.id));
    const logged = vi.spyOn(console, "error").mockImplementation(() => {});
    const [toOne] = await deliveriesOf(one.id);
    const result = await consume("alms-webhooks-local", [{ delivery_id: toOne!.id }]);
    expect(result.retryMessages).toEqual([{ msgId: "m0" }]);
    expect(received).toEqual([]);
    expect((await deliveriesOf(one.id))[0]).toMatchObject({ status: "pending", attempts: 0 });
    const line = logged.mock.calls.map((c) => String(c[0])).find((l) => l.includes(toOne!.id));
    expect(line, "the failure is logged with the delivery id").toContain(`webhook endpoint ${one.id} does not open`);
  });

  it("a late dead letter does not undo a delivery that succeeded since", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/late", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [delivery] = await deliveriesOf(hook.id);
    await consume("alms-webhooks-local", [{ delivery_id: delivery!.id }]);
    expect((await deliveriesOf(hook.id))[0]!.status).toBe("delivered");
    const result = await consume("alms-webhooks-dlq-local", [{ delivery_id: delivery!.id }]);
    expect(result.explicitAcks).toEqual(["m0"]);
    expect((await deliveriesOf(hook.id))[0]!.status).toBe("delivered");
  });

  it("deliveries pending for a removed endpoint end dead without a request", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/removed", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [delivery] = await deliveriesOf(hook.id);
    const del = await call(`/api/v1/webhooks/endpoints/${hook.id}`, { method: "DELETE", key: t.key });
    expect(del.status, del.text).toBe(204);
    const result = await consume("alms-webhooks-local", [{ delivery_id: delivery!.id }]);
    expect(result.explicitAcks).toEqual(["m0"]);
    expect(received).toEqual([]);
    expect((await deliveriesOf(hook.id))[0]).toMatchObject({ status: "dead", lastError: "endpoint removed" });
  });

  it("the nightly job marks dead a delivery pending long past its schedule, and only that one", async () => {
    const t = await makeTenant();
    const stale = await registerEndpoint(t, "http://localhost:9999/stale", ["listing.created"]);
    const fresh = await registerEndpoint(t, "http://localhost:9999/fresh", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [lost] = await deliveriesOf(stale.id);
    await db()
      .update(webhookDeliveries)
      .set({ updatedAt: new Date(Date.now() - 97 * 3600_000).toISOString() })
      .where(eq(webhookDeliveries.id, lost!.id));
    await cron("0 3 * * *");
    expect((await deliveriesOf(stale.id))[0]).toMatchObject({ status: "dead", lastError: "no attempt for 96 hours" });
    expect((await deliveriesOf(fresh.id))[0]!.status).toBe("pending");
  });

  it("the receiver URL is checked again on every delivery", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/moved", ["listing.created"]);
    await makeListing(t);
    await drained();
    await db().update(webhookEndpoints).set({ url: "https://10.0.0.5/hook" }).where(eq(webhookEndpoints.id, hook.id));
    const [delivery] = await deliveriesOf(hook.id);
    const result = await consume("alms-webhooks-local", [{ delivery_id: delivery!.id }]);
    expect(result.explicitAcks).toEqual(["m0"]);
    expect(received).toEqual([]);
    const after = (await deliveriesOf(hook.id))[0]!;
    expect(after.status).toBe("dead");
    expect(after.lastError).toContain("receiver refused");
    expect(
      await db()
        .select()
        .from(webhookDeliveryAttempts)
        .where(inArray(webhookDeliveryAttempts.deliveryId, [delivery!.id]))
        .all(),
    ).toHaveLength(1);
  });
});

describe("the dashboard's view of deliveries", () => {
  it("lists deliveries with their attempts and replays a dead one as a fresh attempt", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/replay", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [delivery] = await deliveriesOf(hook.id);
    answer = () => new Response("down", { status: 503 });
    await consume("alms-webhooks-local", [{ delivery_id: delivery!.id, attempts: 1 }]);
    await consume("alms-webhooks-dlq-local", [{ delivery_id: delivery!.id }]);
    const listed = await internal(`/internal/v1/agencies/${t.agencyId}/webhook-deliveries?status=dead`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json.data).toEqual([
      expect.objectContaining({
        id: delivery!.id,
        status: "dead",
        attempt_log: [expect.objectContaining({ attempt: 1, response_status: 503 })],
      }),
    ]);
    sent = [];
    const replayed = await internal(`/internal/v1/webhook-deliveries/${delivery!.id}/replay`, { method: "POST" });
    expect(replayed.status, replayed.text).toBe(202);
    expect(replayed.json.status).toBe("pending");
    expect(sent).toEqual([{ delivery_id: delivery!.id }]);
    answer = () => new Response("ok");
    await consume("alms-webhooks-local", [{ delivery_id: delivery!.id, attempts: 1 }]);
    expect((await deliveriesOf(hook.id))[0]!.status).toBe("delivered");
    const log = await internal(`/internal/v1/agencies/${t.agencyId}/webhook-deliveries?event_id=${delivery!.eventId}`);
    expect(
      log.json.data[0].attempt_log.map((a: any) => [a.attempt, a.response_status]),
      log.text,
    ).toEqual([
      [1, 503],
      [2, 200],
    ]);
    const bodies = received.map((r) => JSON.parse(r.body));
    expect(bodies).toHaveLength(2);
    expect(bodies[0].event_id).toBe(bodies[1].event_id);
    expect(bodies[0].nonce).not.toBe(bodies[1].nonce);
    vi.mocked(env.WEBHOOK_QUEUE.send).mockRejectedValueOnce(new Error("queue down"));
    const refused = await internal(`/internal/v1/webhook-deliveries/${delivery!.id}/replay`, { method: "POST" });
    expect(refused.status, refused.text).toBe(503);
    expect(refused.json.error.code).toBe("queue_unavailable");
    expect(refused.headers.get("Retry-After")).toBe("30");
    expect((await deliveriesOf(hook.id))[0]!.status, "a refused replay leaves the delivery as it was").toBe(
      "delivered",
    );
    const missing = await internal("/internal/v1/webhook-deliveries/whd_missing/replay", { method: "POST" });
    expect(missing.json.error.code, missing.text).toBe("webhook_delivery_not_found");
  });
});

describe("the test event", () => {
  it("sends a signed webhook.test now and answers what the receiver said", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/test");
    const ok = await call(`/api/v1/webhooks/endpoints/${hook.id}/test`, { method: "POST", key: t.key });
    expect(ok.json, ok.text).toMatchObject({ delivered: true, response_status: 200, error: null });
    const [req] = received;
    expect(req!.headers.get("X-Webhook-Event")).toBe("webhook.test");
    expect(await verify(hook.signing_secret, req!.body, req!.headers.get("X-Webhook-Signature")!)).toBe(true);
    expect(JSON.parse(req!.body)).toMatchObject({
      event_type: "webhook.test",
      event_id: ok.json.event_id,
      data: { endpoint_id: hook.id },
    });
    answer = () => new Response("no", { status: 500 });
    const failed = await call(`/api/v1/webhooks/endpoints/${hook.id}/test`, { method: "POST", key: t.key });
    expect(failed.json).toMatchObject({ delivered: false, response_status: 500, error: "receiver answered 500" });
    expect((await deliveriesOf(hook.id)).filter((d) => d.eventId.startsWith("evt_test"))).toEqual([]);
    const other = await makeTenant();
    const foreign = await call(`/api/v1/webhooks/endpoints/${hook.id}/test`, { method: "POST", key: other.key });
    expect(foreign.json.error.code, foreign.text).toBe("webhook_endpoint_not_found");
  });
});
