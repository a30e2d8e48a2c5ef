import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { webhookDeliveries } from "../../src/db/schema";
import type { ClaimedEvent } from "../../src/webhooks/outbox/claim";
import { deliveriesOf, subscribersOf } from "../../src/webhooks/outbox/fan-out";
import { call, db, expectError, makeListing, makeTenant, type Tenant } from "../support/harness";
import { random } from "../support/random";
import { consume, drained, interceptWebhooks, type Receivers, WEBHOOK_QUEUE } from "../support/webhook-harness";

let receivers: Receivers;
beforeEach(() => {
  receivers = interceptWebhooks();
});
afterEach(() => vi.restoreAllMocks());

async function register(t: Tenant, body: Record<string, unknown>) {
  const r = await call("/api/v1/webhooks/endpoints", { key: t.key, body: { url: "http://localhost:9999/f", ...body } });
  expect(r.status, r.text).toBe(201);
  return r.json as { id: string; signing_secret: string; filters: unknown; payload: string; version: number };
}

const pick = <T>(rand: () => number, of: readonly T[]) => of[Math.floor(rand() * of.length)]!;

const STATUSES = ["Draft", "Active", "Pending", "Sold", "Withdrawn"] as const;

/** The plain reading of filters: every one lists the value its path holds (a missing field is null). */
function reference(filters: { path: string; in: unknown[] }[] | null, data: Record<string, unknown>): boolean {
  return (filters ?? []).every((f) => f.in.includes(data[f.path.slice("data.".length)] ?? null));
}

describe("endpoint filters", () => {
  it("select exactly the events a plain reading selects, over hundreds of random events and filters", async () => {
    const rand = random(42);
    const t = await makeTenant();
    const endpoints: { id: string; filters: { path: string; in: unknown[] }[] | null }[] = [];
    for (let i = 0; i < 8; i++) {
      const filters = [];
      if (rand() < 0.8) filters.push({ path: "data.status", in: STATUSES.filter(() => rand() < 0.4) });
      if (rand() < 0.4) filters.push({ path: "data.previous_status", in: [pick(rand, STATUSES), null] });
      const live = filters.filter((f) => f.in.length);
      const made = await register(t, { event_types: ["listing.status_changed"], filters: live });
      endpoints.push({ id: made.id, filters: live.length ? live : null });
    }
    const subscribers = await subscribersOf(db(), [t.agencyId]);
    let wrong = 0;
    let selected = 0;
    for (let i = 0; i < 300; i++) {
      const data: Record<string, unknown> = { listing_number: `L${i}`, status: pick(rand, STATUSES) };
      if (rand() < 0.8) data.previous_status = pick(rand, STATUSES);
      const event = {
        id: `evt_${i}`,
        agency_id: t.agencyId,
        event_type: "listing.status_changed",
        data: JSON.stringify(data),
      } as ClaimedEvent;
      const rows = new Map(deliveriesOf(event, subscribers).map((r) => [r[2], r[4]]));
      for (const e of endpoints) {
        const expected = reference(e.filters, data) ? "pending" : "filtered";
        if (rows.get(e.id) !== expected) wrong++;
        if (expected === "pending") selected++;
      }
    }
    expect(wrong).toBe(0);
    // Both answers occur, so the comparison says something.
    expect(selected).toBeGreaterThan(100);
    expect(selected).toBeLessThan(8 * 300 - 100);
  });

  it("deliver a matching event, and log the others as filtered rather than lost", async () => {
    const t = await makeTenant();
    const hook = await register(t, {
      event_types: ["listing.created"],
      filters: [{ path: "data.listing_number", in: ["flt0001"] }],
    });
    await makeListing(t, { listingNumber: "flt0001" });
    await makeListing(t, { listingNumber: "flt0002" });
    await drained();
    const rows = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
    expect(rows.map((r) => r.status).sort()).toEqual(["filtered", "pending"]);
    const log = await call(`/api/v1/webhooks/endpoints/${hook.id}/deliveries`, { key: t.key });
    expect(log.status, log.text).toBe(200);
    expect(log.json.data.map((d: { status: string }) => d.status).sort()).toEqual(["filtered", "pending"]);
    const pending = rows.find((r) => r.status === "pending")!;
    await consume(WEBHOOK_QUEUE, [{ delivery_id: pending.id }]);
    expect(receivers.received.map((r) => JSON.parse(r.body).data.listing_number)).toEqual(["flt0001"]);
  });

  it("refuse a path no event type of the endpoint carries, naming it; an update changes them in place", async () => {
    const t = await makeTenant();
    const bad = await call("/api/v1/webhooks/endpoints", {
      key: t.key,
      body: {
        url: "http://localhost:9999/f",
        event_types: ["listing.created"],
        filters: [{ path: "data.previous_status", in: ["Sold"] }],
      },
    });
    expectError(bad, 422, "webhook_filter_invalid");
    expect(bad.json.error.details.path).toBe("data.previous_status");
    const hook = await register(t, { event_types: ["listing.status_changed"] });
    expect(hook).toMatchObject({ filters: null, payload: "full" });
    const path = `/api/v1/webhooks/endpoints/${hook.id}`;
    const changed = await call(path, {
      key: t.key,
      method: "PATCH",
      body: { filters: [{ path: "data.previous_status", in: ["Sold"] }], payload: "thin" },
    });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.json).toMatchObject({ filters: [{ path: "data.previous_status", in: ["Sold"] }], payload: "thin" });
    expect(changed.json.version).toBe(hook.version + 1);
    const same = await call(path, { key: t.key, method: "PATCH", body: { payload: "thin" } });
    expect(same.json.version).toBe(changed.json.version);
    const wrongType = await call(path, { key: t.key, method: "PATCH", body: { event_types: ["listing.created"] } });
    expectError(wrongType, 422, "webhook_filter_invalid");
    const cleared = await call(path, { key: t.key, method: "PATCH", body: { filters: null } });
    expect(cleared.json.filters).toBeNull();
  });
});

describe("thin payloads", () => {
  it("carry the envelope and the resource's ids without data, and verify with standardwebhooks", async () => {
    const t = await makeTenant();
    const hook = await register(t, { event_types: ["listing.created"], payload: "thin" });
    const listing = await makeListing(t);
    await drained();
    const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id }]);
    const [req] = receivers.received;
    const envelope = new Webhook(hook.signing_secret).verify(req!.body, Object.fromEntries(req!.headers)) as Record<
      string,
      unknown
    >;
    expect(envelope).not.toHaveProperty("data");
    expect(envelope).toMatchObject({ event_type: "listing.created", resource: { type: "listing" } });
    expect(JSON.stringify(envelope.resource)).toContain(String(listing.listing_number));
  });
});
