import { and, eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints } from "../../src/db/schema";
import { call, db, expectError, makeListing, makeTenant, type Tenant } from "../support/harness";
import { consume, drained, interceptWebhooks, type Receivers, registerEndpoint } from "../support/webhook-harness";

let receivers: Receivers;
beforeEach(() => {
  receivers = interceptWebhooks();
});
afterEach(() => vi.restoreAllMocks());

const drop = (t: Tenant, endpointId: string, count: number) =>
  call(`/api/v1/test_helpers/webhooks/endpoints/${endpointId}/drop_deliveries`, { key: t.key, body: { count } });

const deliveriesOf = (endpointId: string) =>
  db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId)).all();

const countLeft = async (endpointId: string) =>
  (await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, endpointId)).get())!.sandboxDropNext;

describe("POST /api/v1/test_helpers/webhooks/endpoints/{endpoint_id}/drop_deliveries", () => {
  it("drops exactly the next N attempts: dead at once, no request, no retry; the rest are delivered", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/drops", ["listing.created"]);
    const r = await drop(t, hook.id, 2);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toEqual({ endpoint_id: hook.id, drop_next: 2 });

    for (let i = 0; i < 3; i++) await makeListing(t);
    await drained();
    const pending = await deliveriesOf(hook.id);
    expect(pending).toHaveLength(3);
    const result = await consume(
      "alms-webhooks-local",
      pending.map((d) => ({ delivery_id: d.id })),
    );
    // Every message is acked: a dropped delivery is settled (dead), never retried.
    expect(result.explicitAcks).toHaveLength(3);
    expect(result.retryMessages).toEqual([]);
    const after = await deliveriesOf(hook.id);
    expect(after.filter((d) => d.status === "dead")).toHaveLength(2);
    expect(after.filter((d) => d.status === "delivered")).toHaveLength(1);
    expect(receivers.received).toHaveLength(1);
    for (const dead of after.filter((d) => d.status === "dead")) {
      expect(dead).toMatchObject({ lastError: "dropped by sandbox helper", lastResponseStatus: null, attempts: 1 });
      const attempts = await db()
        .select()
        .from(webhookDeliveryAttempts)
        .where(eq(webhookDeliveryAttempts.deliveryId, dead.id))
        .all();
      expect(attempts).toMatchObject([{ error: "dropped by sandbox helper", responseStatus: null }]);
    }
    expect(await countLeft(hook.id)).toBe(0);

    // The count is spent: the next delivery goes through.
    await makeListing(t);
    await drained();
    const next = (await deliveriesOf(hook.id)).filter((d) => d.status === "pending");
    await consume(
      "alms-webhooks-local",
      next.map((d) => ({ delivery_id: d.id })),
    );
    expect(receivers.received).toHaveLength(2);
  });

  it("takes only what a batch leased, and 0 stops dropping", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/drops-partial", ["listing.created"]);
    expect((await drop(t, hook.id, 5)).status).toBe(200);
    await makeListing(t);
    await drained();
    const [one] = await deliveriesOf(hook.id);
    await consume("alms-webhooks-local", [{ delivery_id: one!.id }]);
    expect(await countLeft(hook.id)).toBe(4);
    expect(receivers.received).toHaveLength(0);

    const stop = await drop(t, hook.id, 0);
    expect(stop.json).toEqual({ endpoint_id: hook.id, drop_next: 0 });
    await makeListing(t);
    await drained();
    const pending = (await deliveriesOf(hook.id)).filter((d) => d.status === "pending");
    await consume(
      "alms-webhooks-local",
      pending.map((d) => ({ delivery_id: d.id })),
    );
    expect(receivers.received).toHaveLength(1);
  });

  it("batches leasing at the same time drop exactly the count between them", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/drops-race", ["listing.created"]);
    await drop(t, hook.id, 3);
    for (let i = 0; i < 8; i++) await makeListing(t);
    await drained();
    const ids = (await deliveriesOf(hook.id)).map((d) => ({ delivery_id: d.id }));
    await Promise.all([consume("alms-webhooks-local", ids.slice(0, 4)), consume("alms-webhooks-local", ids.slice(4))]);
    const after = await deliveriesOf(hook.id);
    expect(after.filter((d) => d.lastError === "dropped by sandbox helper")).toHaveLength(3);
    expect(receivers.received).toHaveLength(5);
    expect(await countLeft(hook.id)).toBe(0);
  });

  it("holds the count to its endpoint: another endpoint of the agency is delivered to", async () => {
    const t = await makeTenant();
    const dropped = await registerEndpoint(t, "http://localhost:9999/drops-a", ["listing.created"]);
    const other = await registerEndpoint(t, "http://localhost:9999/drops-b", ["listing.created"]);
    await drop(t, dropped.id, 1);
    await makeListing(t);
    await drained();
    const both = await db()
      .select()
      .from(webhookDeliveries)
      .where(and(eq(webhookDeliveries.agencyId, t.agencyId)))
      .all();
    await consume(
      "alms-webhooks-local",
      both.map((d) => ({ delivery_id: d.id })),
    );
    expect(receivers.received.map((r) => r.url)).toEqual(["http://localhost:9999/drops-b"]);
    expect((await deliveriesOf(other.id))[0]!.status).toBe("delivered");
  });

  it("is held to the caller's agency and bounded", async () => {
    const t = await makeTenant();
    const stranger = await makeTenant();
    const hook = await registerEndpoint(stranger, "http://localhost:9999/drops-theirs", ["listing.created"]);
    expectError(await drop(t, hook.id, 1), 404, "webhook_endpoint_not_found");
    expect(await countLeft(hook.id)).toBe(0);
    const tooMany = await drop(stranger, hook.id, 101);
    expect(tooMany.status, tooMany.text).toBe(422);
  });
});
