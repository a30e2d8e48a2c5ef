import { and, eq, sql } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, idempotencyMarks, listings, webhookDeliveries } from "../../src/db/schema";
import { nowIso } from "../../src/lib/ids";
import { call, db, expectError, internal, makePlatformKey, makeTenant, type Tenant, unique } from "../support/harness";
import {
  consume,
  drained,
  interceptWebhooks,
  type Receivers,
  registerEndpoint,
  WEBHOOK_QUEUE,
} from "../support/webhook-harness";

let receivers: Receivers;
beforeEach(() => {
  receivers = interceptWebhooks();
});
afterEach(() => vi.restoreAllMocks());

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const inspect = (t: Tenant, requestId: string) => call(`/api/v1/requests/${requestId}`, { key: t.key });

async function createListing(t: Tenant, headers: Record<string, string> = {}, address = unique("addr")) {
  const r = await call("/api/v1/listings", {
    key: t.key,
    headers,
    body: { address: `${address} Harbour Street`, owner_user_id: t.owner.id, agent_one_id: t.agent.id },
  });
  expect(r.status, r.text).toBe(201);
  const [listing] = await db()
    .select({ id: listings.id })
    .from(listings)
    .where(and(eq(listings.agencyId, t.agencyId), eq(listings.listingNumber, r.json.listing_number)));
  expect(listing, r.text).toBeDefined();
  return { requestId: r.headers.get("X-Request-Id")!, res: r };
}

describe("looking up a request", () => {
  it("shows a create: route, status, key, resource, its event and the event's delivery with attempts", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/inspect", ["listing.created"]);
    const idemKey = crypto.randomUUID();
    const { requestId, res } = await createListing(t, {
      "X-Idempotency-Key": idemKey,
      traceparent: `00-${TRACE}-00f067aa0ba902b7-01`,
    });
    await drained();
    const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
    receivers.answer = () => new Response("busy", { status: 503 });
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id, attempts: 1 }]);

    const r = await inspect(t, requestId);
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("X-Rate-Limit-Limit")).toBe("600");
    expect(r.json).toMatchObject({
      request_id: requestId,
      agency_id: t.agencyId,
      operation_id: "createListing",
      method: "POST",
      path: "/api/v1/listings",
      status: 201,
      idempotency_key: idemKey,
      idempotency_outcome: "new",
      resource: { type: "listing", id: res.json.listing_number },
      trace_id: TRACE,
    });
    expect(Date.now() - Date.parse(r.json.created_at)).toBeLessThan(60_000);
    const [event] = await db().select().from(events).where(eq(events.id, delivery!.eventId));
    expect(event!.sequence).toBeGreaterThan(0);
    expect(r.json.events, r.text).toEqual([
      {
        event_id: delivery!.eventId,
        event_type: "listing.created",
        created_at: expect.any(String),
        sequence: event!.sequence,
        resource: { type: "listing", id: res.json.listing_number, version: 1 },
        deliveries: [
          expect.objectContaining({
            id: delivery!.id,
            event_id: delivery!.eventId,
            status: "pending",
            attempts: 1,
            last_response_status: 503,
            attempt_log: [expect.objectContaining({ attempt: 1, response_status: 503 })],
          }),
        ],
      },
    ]);
  });

  it("shows only the events of that request, not those of the agency's other writes", async () => {
    const t = await makeTenant();
    const first = await createListing(t);
    const second = await createListing(t);
    const a = await inspect(t, first.requestId);
    const b = await inspect(t, second.requestId);
    expect(a.json.events, a.text).toHaveLength(1);
    expect(b.json.events, b.text).toHaveLength(1);
    expect(a.json.events[0].event_id).not.toBe(b.json.events[0].event_id);
    expect(a.json.resource.id).toBe(first.res.json.listing_number);
    expect(b.json.resource.id).toBe(second.res.json.listing_number);
    // The id shown is one the listing routes take.
    expect((await call(`/api/v1/listings/${a.json.resource.id}`, { key: t.key })).status).toBe(200);
    const tour = await call("/api/v1/tours", {
      key: t.key,
      body: { address: "8 Inspector Way", city: "Portside", state: "CA", zipcode: "94110" },
    });
    expect(tour.status, tour.text).toBe(201);
    const trail = await inspect(t, tour.headers.get("X-Request-Id")!);
    expect(trail.json.resource, trail.text).toEqual({ type: "tour", id: tour.json.tour_number });
    expect((await call(`/api/v1/tours/${trail.json.resource.id}`, { key: t.key })).status).toBe(200);
  });

  it("shows a key only what its scopes read: events, the resource and the idempotency key", async () => {
    const t = await makeTenant();
    const idemKey = crypto.randomUUID();
    const { requestId, res } = await createListing(t, { "X-Idempotency-Key": idemKey });
    const narrow = await makePlatformKey(t.agencyId, { scopes: ["webhooks:read"] });
    const seen = await call(`/api/v1/requests/${requestId}`, { key: narrow.key });
    expect(seen.status, seen.text).toBe(200);
    expect(seen.json).toMatchObject({ request_id: requestId, status: 201, resource: null, idempotency_key: null });
    expect(seen.json.events).toEqual([]);
    expect(seen.text).not.toContain(res.json.listing_number);
    expect(seen.text).not.toContain(idemKey);
    const wide = await makePlatformKey(t.agencyId, { scopes: ["webhooks:read", "listings:read"] });
    const full = await call(`/api/v1/requests/${requestId}`, { key: wide.key });
    expect(full.json).toMatchObject({
      resource: { type: "listing", id: res.json.listing_number },
      idempotency_key: idemKey,
    });
    expect(full.json.events.map((e: { event_type: string }) => e.event_type)).toEqual(["listing.created"]);
    // The operator sees everything.
    expect((await internal(`/internal/v1/requests/${requestId}`)).json.idempotency_key).toBe(idemKey);
  });

  it("the delivery log, too, lists only deliveries of events the key may read", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/log", ["listing.created"]);
    await createListing(t);
    await drained();
    const path = `/api/v1/webhooks/endpoints/${hook.id}/deliveries`;
    const full = await call(path, { key: t.key });
    expect(full.status, full.text).toBe(200);
    expect(full.json.data.map((d: { event_type: string }) => d.event_type)).toEqual(["listing.created"]);
    const narrow = await makePlatformKey(t.agencyId, { scopes: ["webhooks:read"] });
    const seen = await call(path, { key: narrow.key });
    expect(seen.status, seen.text).toBe(200);
    expect(seen.json.data).toEqual([]);
  });

  it("is 404 request_not_found for another agency's request, and the operator sees it", async () => {
    const owner = await makeTenant();
    const other = await makeTenant();
    const { requestId } = await createListing(owner);
    expectError(await inspect(other, requestId), 404, "request_not_found");
    const op = await internal(`/internal/v1/requests/${requestId}`);
    expect(op.status, op.text).toBe(200);
    expect(op.json).toMatchObject({ request_id: requestId, agency_id: owner.agencyId, operation_id: "createListing" });
    expect(op.json.events).toHaveLength(1);
  });

  it("is 404 for an unknown id, a read, a replay, a failed write and an expired mark", async () => {
    const t = await makeTenant();
    expectError(await inspect(t, "req_unknown"), 404, "request_not_found");
    const read = await call("/api/v1/listings", { key: t.key });
    expectError(await inspect(t, read.headers.get("X-Request-Id")!), 404, "request_not_found");
    const failed = await call("/api/v1/listings", { key: t.key, body: { address: "" } });
    expect(failed.status).toBe(422);
    const notFound = await inspect(t, failed.headers.get("X-Request-Id")!);
    expectError(notFound, 404, "request_not_found");
    // The message names the rule that applies (only committed writes are kept), not only the 24 hours.
    expect(notFound.json.error.message).toMatch(/committed/);
    const idemKey = crypto.randomUUID();
    const address = unique("addr");
    const made = await createListing(t, { "X-Idempotency-Key": idemKey }, address);
    const replay = await createListing(t, { "X-Idempotency-Key": idemKey }, address);
    expect(replay.res.headers.get("X-Idempotent-Replay"), replay.res.text).not.toBeNull();
    expect(replay.requestId).not.toBe(made.requestId);
    expectError(await inspect(t, replay.requestId), 404, "request_not_found");
    expect((await inspect(t, made.requestId)).status).toBe(200);
    expectError(await internal("/internal/v1/requests/req_unknown"), 404, "request_not_found");

    await db()
      .update(idempotencyMarks)
      .set({ expiresAt: nowIso(Date.now() - 1000) })
      .where(eq(idempotencyMarks.requestId, made.requestId));
    expectError(await inspect(t, made.requestId), 404, "request_not_found");
  });

  it("finds the mark by its index and the events by (agency, trace) with a seek", async () => {
    const mark = await db().all<{ detail: string }>(
      sql`EXPLAIN QUERY PLAN SELECT * FROM idempotency_marks WHERE request_id = 'req_x' AND agency_id = 'agy_x'`,
    );
    expect(mark.map((p) => p.detail).join("\n")).toMatch(
      /SEARCH idempotency_marks USING INDEX idempotency_marks_request/,
    );
    const plan = await db().all<{ detail: string }>(
      sql`EXPLAIN QUERY PLAN SELECT id FROM events WHERE agency_id = 'agy_x' AND trace_parent = '00-x' ORDER BY created_at, id LIMIT 50`,
    );
    const steps = plan.map((p) => p.detail);
    expect(steps.join("\n")).toMatch(
      /SEARCH events USING (COVERING )?INDEX events_trace \(agency_id=\? AND trace_parent=\?\)/,
    );
    for (const step of steps) expect(step).not.toMatch(/^SCAN events/);
  });
});
