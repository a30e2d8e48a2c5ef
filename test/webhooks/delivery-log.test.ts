import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { type WebhookDelivery, type WebhookDeliveryAttempt, webhookDeliveries } from "../../src/db/schema";
import { MAX_ERROR_CHARS } from "../../src/schemas/delivery-log";
import { ATTEMPTS_PER_RUN, nextAttemptAt, retryDelay } from "../../src/webhooks/delivery/retry-schedule";
import { call, db, expectError, internal, makeListing, makeTenant, type Tenant } from "../support/harness";
import {
  consume,
  drained,
  interceptWebhooks,
  type Receivers,
  registerEndpoint,
  WEBHOOK_DLQ,
  WEBHOOK_QUEUE,
} from "../support/webhook-harness";

let receivers: Receivers;
beforeEach(() => {
  receivers = interceptWebhooks();
});
afterEach(() => vi.restoreAllMocks());

const DAY = 24 * 3600 * 1000;
const log = (t: Tenant, endpointId: string, query = "") =>
  call(`/api/v1/webhooks/endpoints/${endpointId}/deliveries${query}`, { key: t.key });

/** An endpoint with one listing.created delivery queued for it. */
async function oneDelivery(t: Tenant, path: string) {
  const hook = await registerEndpoint(t, `http://localhost:9999/${path}`, ["listing.created"]);
  await makeListing(t);
  await drained();
  const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
  return { hook, delivery: delivery! };
}

const seconds = (a: string, b: string) => (Date.parse(a) - Date.parse(b)) / 1000;

describe("the delivery log of an endpoint", () => {
  it("shows a 503 then a 200: status, attempts, last answer, next retry, then delivered", async () => {
    const t = await makeTenant();
    const { hook, delivery } = await oneDelivery(t, "flaky");
    const queued = await log(t, hook.id);
    expect(queued.status, queued.text).toBe(200);
    expect(queued.json.data, queued.text).toEqual([
      expect.objectContaining({ id: delivery.id, status: "pending", attempts: 0, attempt_log: [] }),
    ]);
    expect(queued.headers.get("X-Rate-Limit-Limit")).toBe("120");

    receivers.answer = () => new Response("busy", { status: 503 });
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery.id, attempts: 1 }]);
    const failed = (await log(t, hook.id)).json.data[0];
    expect(failed, JSON.stringify(failed)).toMatchObject({
      id: delivery.id,
      event_id: delivery.eventId,
      event_type: "listing.created",
      status: "pending",
      attempts: 1,
      last_response_status: 503,
      last_error: "receiver answered 503",
      delivered_at: null,
      created_at: delivery.createdAt,
      attempt_log: [{ attempt: 1, response_status: 503, error: "receiver answered 503" }],
    });
    expect(seconds(failed.next_attempt_at, failed.attempt_log[0].attempted_at)).toBe(retryDelay(1));

    receivers.answer = () => new Response("ok");
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery.id, attempts: 2 }]);
    const done = (await log(t, hook.id)).json.data[0];
    expect(done, JSON.stringify(done)).toMatchObject({
      status: "delivered",
      attempts: 2,
      last_response_status: 200,
      last_error: null,
      next_attempt_at: null,
    });
    expect(done.delivered_at).toEqual(expect.any(String));
    expect(done.attempt_log.map((a: any) => [a.attempt, a.response_status, a.error])).toEqual([
      [1, 503, "receiver answered 503"],
      [2, 200, null],
    ]);
    // The event it carried is the one the events API shows.
    const event = await call(`/api/v1/events/${done.event_id}`, { key: t.key });
    expect(event.json.event_type, event.text).toBe("listing.created");
    expect(JSON.parse(receivers.received[1]!.body).data).toEqual(event.json.data);
  });

  it("shows a replay made in the dashboard: pending again, then the new attempt", async () => {
    const t = await makeTenant();
    const { hook, delivery } = await oneDelivery(t, "replayed");
    receivers.answer = () => new Response("down", { status: 503 });
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery.id, attempts: 1 }]);
    await consume(WEBHOOK_DLQ, [{ delivery_id: delivery.id }]);
    const dead = await log(t, hook.id, "?status=dead");
    expect(
      dead.json.data.map((d: any) => [d.id, d.status, d.next_attempt_at]),
      dead.text,
    ).toEqual([[delivery.id, "dead", null]]);
    expect((await log(t, hook.id, "?status=pending")).json.data).toEqual([]);

    const replayed = await internal(`/internal/v1/webhook-deliveries/${delivery.id}/replay`, { method: "POST" });
    expect(replayed.status, replayed.text).toBe(202);
    const pending = (await log(t, hook.id, "?status=pending")).json.data;
    expect(pending, JSON.stringify(pending)).toMatchObject([{ id: delivery.id, status: "pending", attempts: 1 }]);
    expect(Date.parse(pending[0].next_attempt_at), "due now: it waits in the queue").toBeLessThanOrEqual(Date.now());

    // The replay restarts the schedule: a failure now waits the first step again.
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery.id, attempts: 1 }]);
    const retrying = (await log(t, hook.id)).json.data[0];
    expect(
      retrying.attempt_log.map((a: any) => a.attempt),
      JSON.stringify(retrying),
    ).toEqual([1, 2]);
    expect(seconds(retrying.next_attempt_at, retrying.attempt_log[1].attempted_at)).toBe(retryDelay(1));

    receivers.answer = () => new Response("ok");
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery.id, attempts: 2 }]);
    const delivered = (await log(t, hook.id, `?event_id=${delivery.eventId}`)).json.data;
    expect(delivered, JSON.stringify(delivered)).toMatchObject([{ id: delivery.id, status: "delivered", attempts: 3 }]);
    expect(delivered[0].attempt_log.map((a: any) => [a.attempt, a.response_status])).toEqual([
      [1, 503],
      [2, 503],
      [3, 200],
    ]);
  });

  it("pages by cursor, oldest first, and filters by status and event", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/paged", ["listing.created"]);
    for (let i = 0; i < 3; i++) await makeListing(t);
    await drained();
    const rows = await db()
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.endpointId, hook.id))
      .orderBy(webhookDeliveries.createdAt, webhookDeliveries.id);
    expect(rows).toHaveLength(3);
    await consume(WEBHOOK_QUEUE, [{ delivery_id: rows[1]!.id }]);
    const p1 = await log(t, hook.id, "?limit=2");
    expect(
      p1.json.data.map((d: any) => d.id),
      p1.text,
    ).toEqual([rows[0]!.id, rows[1]!.id]);
    const p2 = await log(t, hook.id, `?limit=2&cursor=${p1.json.next_cursor}`);
    expect(
      p2.json.data.map((d: any) => d.id),
      p2.text,
    ).toEqual([rows[2]!.id]);
    expect(p2.json.next_cursor).toBe("");
    const delivered = await log(t, hook.id, "?status=delivered");
    expect(
      delivered.json.data.map((d: any) => d.id),
      delivered.text,
    ).toEqual([rows[1]!.id]);
    const byEvent = await log(t, hook.id, `?event_id=${rows[2]!.eventId}`);
    expect(
      byEvent.json.data.map((d: any) => d.id),
      byEvent.text,
    ).toEqual([rows[2]!.id]);
    const foreignCursor = await log(t, hook.id, `?status=pending&cursor=${p1.json.next_cursor}`);
    expectError(foreignCursor, 422, "request_query_invalid");
    const badStatus = await log(t, hook.id, "?status=failed");
    expectError(badStatus, 422, "request_query_invalid");
    expect(badStatus.json.error.details.errors[0].code, badStatus.text).toBe("validation_enum_not_allowed");
  });

  it("bounds error texts", async () => {
    const t = await makeTenant();
    const { hook, delivery } = await oneDelivery(t, "long-error");
    await db()
      .update(webhookDeliveries)
      .set({ lastError: `request failed: ${"x".repeat(2000)}` })
      .where(eq(webhookDeliveries.id, delivery.id));
    const [entry] = (await log(t, hook.id)).json.data;
    expect(entry.last_error).toHaveLength(MAX_ERROR_CHARS);
    expect(entry.last_error).toMatch(/^request failed: x+…$/);
  });

  it("keeps 30 days after the last attempt, and a pending delivery always", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/aged", ["listing.created"]);
    await makeListing(t);
    await makeListing(t);
    await drained();
    const [settled, pending] = await db()
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.endpointId, hook.id))
      .orderBy(webhookDeliveries.createdAt, webhookDeliveries.id);
    const old = new Date(Date.now() - 31 * DAY).toISOString();
    await db()
      .update(webhookDeliveries)
      .set({ status: "dead", updatedAt: old, createdAt: old })
      .where(eq(webhookDeliveries.id, settled!.id));
    await db()
      .update(webhookDeliveries)
      .set({ updatedAt: old, createdAt: old })
      .where(eq(webhookDeliveries.id, pending!.id));
    const r = await log(t, hook.id);
    expect(
      r.json.data.map((d: any) => d.id),
      r.text,
    ).toEqual([pending!.id]);
  });

  it("is confined to the caller's own endpoints and needs webhooks:read", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const { hook } = await oneDelivery(a, "private");
    expectError(await log(b, hook.id), 404, "webhook_endpoint_not_found");
    expectError(await log(a, "we_unknown"), 404, "webhook_endpoint_not_found");
    const writer = await makeTenant({ scopes: ["webhooks:write"] });
    expectError(await log(writer, hook.id), 403, "auth.scope_denied");
    const reader = await makeTenant({ scopes: ["webhooks:read"] });
    expectError(await log(reader, hook.id), 404, "webhook_endpoint_not_found");
    const own = await log(a, hook.id);
    expect(own.json.data, own.text).toHaveLength(1);
    const removed = await call(`/api/v1/webhooks/endpoints/${hook.id}`, { method: "DELETE", key: a.key });
    expect(removed.status, removed.text).toBe(204);
    expectError(await log(a, hook.id), 404, "webhook_endpoint_not_found");
  });
});

describe("the next attempt of a pending delivery", () => {
  const at = (ms: number) => new Date(ms).toISOString();
  const t0 = Date.parse("2026-11-22T12:00:00.000Z");
  const delivery = (over: Partial<WebhookDelivery> = {}) =>
    ({ status: "pending", createdAt: at(t0), replayedAt: null, ...over }) as WebhookDelivery;
  const attempts = (...times: number[]) =>
    times.map((ms, i) => ({ attempt: i + 1, attemptedAt: at(ms) }) as WebhookDeliveryAttempt);

  it("follows the retry schedule from the last attempt of the current run", () => {
    expect(nextAttemptAt(delivery(), [])).toBe(at(t0));
    expect(nextAttemptAt(delivery(), attempts(t0))).toBe(at(t0 + 30_000));
    expect(nextAttemptAt(delivery(), attempts(t0, t0 + 30_000, t0 + 90_000))).toBe(at(t0 + 90_000 + 120_000));
    const spent = Array.from({ length: ATTEMPTS_PER_RUN }, (_, i) => t0 + i * 1000);
    expect(nextAttemptAt(delivery(), attempts(...spent)), "retries spent: on its way to dead").toBeNull();
    const replayedAt = at(t0 + DAY);
    expect(nextAttemptAt(delivery({ replayedAt }), attempts(...spent))).toBe(replayedAt);
    expect(nextAttemptAt(delivery({ replayedAt }), attempts(...spent, t0 + DAY + 5))).toBe(at(t0 + DAY + 5 + 30_000));
    expect(nextAttemptAt(delivery({ status: "delivered" }), attempts(t0))).toBeNull();
    expect(nextAttemptAt(delivery({ status: "dead" }), attempts(t0))).toBeNull();
  });
});
