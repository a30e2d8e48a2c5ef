import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import Stripe from "stripe";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { BASE, call, expectError, makeListing, makeTenant, outbox } from "../support/harness";

const SECRET = "whsec_stripe_test_secret";
const stripe = new Stripe("sk_test_not_used_for_requests");

async function deliver(event: object, opts: { secret?: string; timestamp?: number; header?: string } = {}) {
  const payload = JSON.stringify(event);
  const header =
    opts.header ??
    (await stripe.webhooks.generateTestHeaderStringAsync({
      payload,
      secret: opts.secret ?? SECRET,
      timestamp: opts.timestamp,
    }));
  return call("/hooks/stripe", {
    method: "POST",
    rawBody: payload,
    headers: { "Content-Type": "application/json", "Stripe-Signature": header },
    idempotencyKey: null,
  });
}

const invoicePaid = (agencyId: string, listingNumber: string | null, id = `in_${crypto.randomUUID().slice(0, 8)}`) => ({
  id: `evt_${crypto.randomUUID().slice(0, 12)}`,
  type: "invoice.paid",
  data: {
    object: {
      id,
      amount_paid: 24900,
      currency: "usd",
      payment_intent: `pi_${id}`,
      created: 1_790_000_000,
      status_transitions: { paid_at: 1_790_000_100 },
      metadata: { agency_id: agencyId, ...(listingNumber ? { listing_number: listingNumber } : {}) },
    },
  },
});

describe("the Stripe receiver", () => {
  it(
    "invoice.paid records the invoice and payment on the listing's orders and emits " + "invoice.payment_made once",
    async () => {
      const t = await makeTenant();
      const listing = await makeListing(t);
      const event = invoicePaid(t.agencyId, listing.listing_number);
      const r = await deliver(event);
      expect(r.json, r.text).toEqual({ received: true, outcome: "applied" });
      const again = await deliver(event);
      expect(again.json.outcome).toBe("duplicate");
      const orders = await call(`/api/v1/listings/${listing.listing_number}/orders`, { key: t.key });
      expect(orders.json.data.map((o: any) => [o.type, o.status, o.amount_minor])).toEqual([
        ["invoice", "paid", 24900],
        ["payment", "succeeded", 24900],
      ]);
      expect(orders.json.data[0].provider_reference).toBe(event.data.object.id);
      const emitted = await outbox(t.agencyId, "invoice.payment_made");
      expect(emitted.map((e) => e.data)).toEqual([
        expect.objectContaining({
          invoice_id: event.data.object.id,
          listing_number: listing.listing_number,
          amount_minor: 24900,
          currency: "usd",
          paid_at: new Date(1_790_000_100_000).toISOString(),
        }),
      ]);
    },
  );

  it("maps subscription creation and deletion", async () => {
    const t = await makeTenant();
    const sub = {
      id: "sub_123",
      status: "active",
      start_date: 1_790_000_000,
      items: { data: [{ price: { id: "price_1", nickname: "Agency Pro" } }] },
      metadata: { agency_id: t.agencyId },
    };
    expect(
      (await deliver({ id: "evt_sub_created_1", type: "customer.subscription.created", data: { object: sub } })).json
        .outcome,
    ).toBe("applied");
    expect(
      (
        await deliver({
          id: "evt_sub_deleted_1",
          type: "customer.subscription.deleted",
          data: { object: { ...sub, status: "canceled", ended_at: 1_790_500_000 } },
        })
      ).json.outcome,
    ).toBe("applied");
    expect((await outbox(t.agencyId, "subscription.created"))[0]!.data).toEqual({
      subscription_id: "sub_123",
      plan: "Agency Pro",
      status: "active",
      started_at: new Date(1_790_000_000_000).toISOString(),
    });
    expect((await outbox(t.agencyId, "subscription.cancelled"))[0]!.data).toEqual({
      subscription_id: "sub_123",
      cancelled_at: new Date(1_790_500_000_000).toISOString(),
    });
  });

  it("a deletion of an unknown subscription records it ended, once; replays and repeats emit nothing", async () => {
    const t = await makeTenant();
    const id = `sub_${crypto.randomUUID().replaceAll("-", "")}`;
    const object = { id, status: "canceled", ended_at: 1_790_500_000, metadata: { agency_id: t.agencyId } };
    const deleted = { id: `evt_${crypto.randomUUID().slice(0, 12)}`, type: "customer.subscription.deleted" };
    expect((await deliver({ ...deleted, data: { object } })).json.outcome).toBe("applied");
    expect((await deliver({ ...deleted, data: { object } })).json.outcome).toBe("duplicate");
    const repeat = await deliver({ id: `${deleted.id}_again`, type: deleted.type, data: { object } });
    expect(repeat.json, repeat.text).toEqual({ received: true, outcome: "ignored" });
    // Its start arriving late does not emit a start after the end.
    const late = await deliver({
      id: `${deleted.id}_created`,
      type: "customer.subscription.created",
      data: { object: { ...object, status: "active", start_date: 1_790_000_000 } },
    });
    expect(late.json.outcome, late.text).toBe("ignored");
    expect((await outbox(t.agencyId, "subscription.cancelled")).map((e) => e.data)).toEqual([
      { subscription_id: id, cancelled_at: new Date(1_790_500_000_000).toISOString() },
    ]);
    expect(await outbox(t.agencyId, "subscription.created")).toEqual([]);
    // The recorded subscription is the agency's: the sandbox helper finds it, ended.
    const helper = await call(`/api/v1/test_helpers/billing/subscriptions/${id}/cancel`, {
      key: t.key,
      method: "POST",
    });
    expect(helper.status, helper.text).toBe(200);
    expect(helper.json).toMatchObject({
      subscription_id: id,
      status: "cancelled",
      stripe_event: { outcome: "ignored" },
    });
  });

  it("a deletion naming another agency than the subscription's changes nothing", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const id = `sub_${crypto.randomUUID().replaceAll("-", "")}`;
    const created = await deliver({
      id: `evt_${crypto.randomUUID().slice(0, 12)}`,
      type: "customer.subscription.created",
      data: { object: { id, status: "active", start_date: 1_790_000_000, metadata: { agency_id: a.agencyId } } },
    });
    expect(created.json.outcome, created.text).toBe("applied");
    const foreign = await deliver({
      id: `evt_${crypto.randomUUID().slice(0, 12)}`,
      type: "customer.subscription.deleted",
      data: { object: { id, status: "canceled", ended_at: 1_790_500_000, metadata: { agency_id: b.agencyId } } },
    });
    expect(foreign.json.outcome, foreign.text).toBe("ignored");
    expect(await outbox(b.agencyId, "subscription.cancelled")).toEqual([]);
    expect(await outbox(a.agencyId, "subscription.cancelled")).toEqual([]);
  });

  it("acknowledges and ignores unknown types", async () => {
    const t = await makeTenant();
    const r = await deliver({
      id: "evt_other_1",
      type: "charge.refunded",
      data: { object: { metadata: { agency_id: t.agencyId } } },
    });
    expect(r.json, r.text).toEqual({ received: true, outcome: "ignored" });
  });

  it("acknowledges and ignores an event for an agency that is not ours", async () => {
    const r = await deliver(invoicePaid("agy_not_in_this_environment", null));
    expect(r.json, r.text).toEqual({ received: true, outcome: "ignored" });
    expect(await outbox("agy_not_in_this_environment")).toEqual([]);
  });

  it("accepts any matching v1 signature, as Stripe sends while its secret is rolled", async () => {
    const t = await makeTenant();
    const event = invoicePaid(t.agencyId, null);
    const payload = JSON.stringify(event);
    const timestamp = Math.floor(Date.now() / 1000);
    const old = await stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: "whsec_previous", timestamp });
    const current = await stripe.webhooks.generateTestHeaderStringAsync({ payload, secret: SECRET, timestamp });
    const v1 = (header: string) => header.split(",").find((p) => p.startsWith("v1="))!;
    const r = await deliver(event, { header: `t=${timestamp},${v1(old)},${v1(current)}` });
    expect(r.json, r.text).toEqual({ received: true, outcome: "applied" });
  });

  it("refuses a bad, foreign or stale signature, writing nothing", async () => {
    const t = await makeTenant();
    const event = invoicePaid(t.agencyId, null);
    expectError(await deliver(event, { secret: "whsec_someone_else" }), 400, "stripe_signature_invalid");
    expectError(
      await deliver(event, { timestamp: Math.floor(Date.now() / 1000) - 600 }),
      400,
      "stripe_signature_invalid",
    );
    expectError(await deliver(event, { header: "t=1,v1=deadbeef" }), 400, "stripe_signature_invalid");
    expectError(
      await call("/hooks/stripe", {
        method: "POST",
        rawBody: JSON.stringify(event),
        headers: { "Content-Type": "application/json" },
        idempotencyKey: null,
      }),
      400,
      "stripe_signature_invalid",
    );
    expect(await outbox(t.agencyId, "invoice.payment_made")).toEqual([]);
  });

  it("does not exist where no Stripe secret is configured", async () => {
    const { STRIPE_WEBHOOK_SECRET: _, ...without } = env as Env & { STRIPE_WEBHOOK_SECRET?: string };
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}/hooks/stripe`, { method: "POST", body: "{}" }),
      without as Env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe("request_path_not_found");
  });
});
