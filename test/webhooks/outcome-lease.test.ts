import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { webhookDeliveries } from "../../src/db/schema";
import { claimBatch } from "../../src/webhooks/delivery/claim";
import { LEASE_MS } from "../../src/webhooks/delivery/limits";
import { type AttemptOutcome, outcomeWriter } from "../../src/webhooks/delivery/outcome-writer";
import { db, makeListing, makeTenant } from "../support/harness";
import { drained, interceptWebhooks, registerEndpoint } from "../support/webhook-harness";

beforeEach(() => {
  interceptWebhooks();
});
afterEach(() => vi.restoreAllMocks());

const deliveryOf = async (endpointId: string) =>
  (await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, endpointId)).all())[0]!;

describe("the outcome of a batch that lost its lease", () => {
  it("does not overwrite the result of the batch that took the delivery over", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/lease", ["listing.created"]);
    await makeListing(t);
    await drained();
    const { id, endpointId } = await deliveryOf(hook.id);
    const started = Date.now();
    // The first batch's lease runs out mid-attempt; a second batch takes the delivery and delivers it.
    const late = await claimBatch(db(), [id], started);
    const taker = await claimBatch(db(), [id], started + LEASE_MS + 1);
    expect(late.leased.has(id) && taker.leased.has(id)).toBe(true);
    const outcome = (o: Partial<AttemptOutcome>): AttemptOutcome => ({
      deliveryId: id,
      endpointId,
      attempt: 1,
      started,
      latencyMs: 5,
      status: 200,
      error: null,
      ...o,
    });
    await outcomeWriter(env.DB, taker.lease).record(outcome({ final: "delivered" }));
    const delivered = await deliveryOf(hook.id);
    expect(delivered).toMatchObject({ status: "delivered", lastResponseStatus: 200, leasedUntil: null });
    // The first batch's attempt ends late and would end the delivery dead.
    await outcomeWriter(env.DB, late.lease).record(outcome({ status: 500, error: "HTTP 500", final: "dead" }));
    expect(await deliveryOf(hook.id)).toEqual(delivered);
  });

  it("still records the attempt of a batch whose lease ran out when no other batch took the delivery", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/expired", ["listing.created"]);
    await makeListing(t);
    await drained();
    const { id, endpointId } = await deliveryOf(hook.id);
    const claim = await claimBatch(db(), [id], Date.now() - LEASE_MS - 1);
    await outcomeWriter(env.DB, claim.lease).record({
      deliveryId: id,
      endpointId,
      attempt: 1,
      started: Date.now(),
      latencyMs: 5,
      status: 200,
      error: null,
      final: "delivered",
    });
    expect(await deliveryOf(hook.id)).toMatchObject({ status: "delivered", attempts: 1, leasedUntil: null });
  });
});
