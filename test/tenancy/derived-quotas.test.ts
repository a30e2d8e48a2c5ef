import { and, count, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import {
  events,
  idempotencyMarks,
  listings,
  tourSearchGrams,
  webhookDeliveries,
  webhookDeliveryAttempts,
} from "../../src/db/schema";
import { refusedResource, UNREFUSED_EVENT_TYPES } from "../../src/domain/quotas";
import { call, db, expectError, makeListing, makeTenant, type Tenant, unique } from "../support/harness";
import { setQuotas, usage } from "../support/quota-kit";

const eventsOf = async (agencyId: string) =>
  (await db().select({ n: count() }).from(events).where(eq(events.agencyId, agencyId)))[0]!.n;

/** A write that emits one event: the listing's Matterport URL set to a new value. */
const setMatterport = (t: Tenant, listingNumber: string) =>
  call(`/api/v1/listings/${listingNumber}/sections/matterport`, {
    method: "PATCH",
    key: t.key,
    body: { operation: "set", url: `https://my.matterport.com/show/?m=${unique("m")}` },
  });

const versionOf = async (t: Tenant, listingNumber: string) =>
  (
    await db()
      .select({ version: listings.version })
      .from(listings)
      .where(and(eq(listings.agencyId, t.agencyId), eq(listings.listingNumber, listingNumber)))
      .get()
  )?.version;

/** A delivery of one of the agency's events, with `attempts` attempts, written as the drain and consumer do. */
async function deliveryWithAttempts(t: Tenant, attempts: number): Promise<string> {
  const [event] = await db().select({ id: events.id }).from(events).where(eq(events.agencyId, t.agencyId)).limit(1);
  const id = unique("whd");
  await db()
    .insert(webhookDeliveries)
    .values({ id, eventId: event!.id, endpointId: unique("whe"), agencyId: t.agencyId });
  for (let n = 1; n <= attempts; n++) {
    await db()
      .insert(webhookDeliveryAttempts)
      .values({ id: unique("wha"), deliveryId: id, attempt: n, attemptedAt: new Date().toISOString(), latencyMs: 5 });
  }
  return id;
}

describe("what each write derives counts against its agency", () => {
  it("fills one agency to its event quota with real writes; agencies on its shard and on another write on", async () => {
    const full = await makeTenant();
    const other = await makeTenant();
    const elsewhere = await makeTenant({ shard: "shard-2" });
    const l = await makeListing(full);
    const theirs = await makeListing(other);
    const far = await makeListing(elsewhere);
    const held = await usage(full.agencyId, "events");
    expect(held).toBe(await eventsOf(full.agencyId));
    await setQuotas(full, { events: held + 3 });
    for (let i = 0; i < 3; i++) expect((await setMatterport(full, l.listing_number)).status).toBe(200);
    const version = await versionOf(full, l.listing_number);
    const refused = await setMatterport(full, l.listing_number);
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details, refused.text).toEqual({ resource: "events", limit: held + 3, usage: held + 3 });
    // The refused write stored nothing: no event, no new version.
    expect(await eventsOf(full.agencyId)).toBe(held + 3);
    expect(await versionOf(full, l.listing_number)).toBe(version);
    // Reads go on, and so does every other agency's writing.
    expect((await call(`/api/v1/listings/${l.listing_number}`, { key: full.key })).status).toBe(200);
    for (let i = 0; i < 5; i++) {
      expect((await setMatterport(other, theirs.listing_number)).status).toBe(200);
      const written = await setMatterport(elsewhere, far.listing_number);
      expect(written.status, written.text).toBe(200);
      // Its own budget, untouched by the full agency: the window counts only its own writes.
      expect(Number(written.headers.get("x-rate-limit-remaining"))).toBeGreaterThan(0);
    }
    const limits = await call("/api/v1/limits", { key: full.key });
    expect(limits.json.quotas.events, limits.text).toMatchObject({ limit: held + 3, used: held + 3, remaining: 0 });
  });

  it("refuses a write that would emit an event while deliveries or attempts are at their quota", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    await deliveryWithAttempts(t, 2);
    expect(await usage(t.agencyId, "webhook_deliveries")).toBe(1);
    expect(await usage(t.agencyId, "webhook_attempts")).toBe(2);
    await setQuotas(t, { webhook_deliveries: 1 });
    const byDeliveries = await setMatterport(t, l.listing_number);
    expectError(byDeliveries, 409, "agency_quota_exceeded");
    expect(byDeliveries.json.error.details.resource).toBe("webhook_deliveries");
    await setQuotas(t, { webhook_deliveries: null, webhook_attempts: 2 });
    const byAttempts = await setMatterport(t, l.listing_number);
    expect(byAttempts.json.error?.details.resource, byAttempts.text).toBe("webhook_attempts");
    await setQuotas(t, { webhook_attempts: 3 });
    expect((await setMatterport(t, l.listing_number)).status).toBe(200);
  });

  it("refuses a write whose commit mark would pass the marks quota, storing nothing", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const marks = await usage(t.agencyId, "idempotency_marks");
    expect(marks).toBeGreaterThan(0);
    await setQuotas(t, { idempotency_marks: marks });
    const eventsBefore = await eventsOf(t.agencyId);
    const refused = await call(`/api/v1/listings/${l.listing_number}/sections/matterport`, {
      method: "PATCH",
      key: t.key,
      idempotencyKey: "one-mark-too-many",
      body: { operation: "set", url: "https://my.matterport.com/show/?m=refused" },
    });
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details).toEqual({ resource: "idempotency_marks", limit: marks, usage: marks });
    expect(await eventsOf(t.agencyId)).toBe(eventsBefore);
    const stored = await db()
      .select()
      .from(idempotencyMarks)
      .where(and(eq(idempotencyMarks.agencyId, t.agencyId), eq(idempotencyMarks.idemKey, "one-mark-too-many")));
    expect(stored).toEqual([]);
  });

  it("refuses a tour whose address would pass the search grams quota", async () => {
    const t = await makeTenant();
    const grams = await usage(t.agencyId, "tour_search_grams");
    await setQuotas(t, { tour_search_grams: grams + 20 });
    const body = { city: "Portside", state: "CA", zipcode: "94110" };
    const short = await call("/api/v1/tours", { key: t.key, body: { ...body, address: "1 Elm St" } });
    expect(short.status, short.text).toBe(201);
    const refused = await call("/api/v1/tours", {
      key: t.key,
      body: { ...body, address: "1234 Long Harbour Boulevard North" },
    });
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details.resource).toBe("tour_search_grams");
  });

  it("keeps every derived counter equal to what its table holds, through writes and deletes", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    for (let i = 0; i < 3; i++) expect((await setMatterport(t, l.listing_number)).status).toBe(200);
    const tour = await call("/api/v1/tours", {
      key: t.key,
      body: { address: "77 Counter Lane", city: "Portside", state: "CA", zipcode: "94110" },
    });
    expect(tour.status, tour.text).toBe(201);
    const delivery = await deliveryWithAttempts(t, 3);
    const actual = async () => {
      const [row] = await db().all<Record<string, number>>(sql`SELECT
        (SELECT count(*) FROM ${events} WHERE agency_id = ${t.agencyId}) AS events,
        (SELECT count(*) FROM ${idempotencyMarks} WHERE agency_id = ${t.agencyId}) AS idempotency_marks,
        (SELECT count(*) FROM ${tourSearchGrams} WHERE agency_id = ${t.agencyId}) AS tour_search_grams,
        (SELECT count(*) FROM ${webhookDeliveries} WHERE agency_id = ${t.agencyId}) AS webhook_deliveries,
        (SELECT count(*) FROM ${webhookDeliveryAttempts} a JOIN ${webhookDeliveries} d ON d.id = a.delivery_id
          WHERE d.agency_id = ${t.agencyId}) AS webhook_attempts`);
      return row!;
    };
    const counters = async () =>
      Object.fromEntries(
        await Promise.all(
          ["events", "idempotency_marks", "tour_search_grams", "webhook_deliveries", "webhook_attempts"].map(
            async (r) => [r, await usage(t.agencyId, r)] as const,
          ),
        ),
      );
    const before = await actual();
    expect(before.events).toBeGreaterThanOrEqual(4);
    expect(before.tour_search_grams).toBeGreaterThan(10);
    expect(before).toMatchObject({ webhook_deliveries: 1, webhook_attempts: 3 });
    expect(await counters()).toEqual(before);

    const del = await call(`/api/v1/tours/${tour.json.tour_number}`, { method: "DELETE", key: t.key });
    expect(del.status, del.text).toBe(204);
    await db().delete(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, delivery));
    await db().delete(webhookDeliveries).where(eq(webhookDeliveries.id, delivery));
    await db().delete(idempotencyMarks).where(eq(idempotencyMarks.agencyId, t.agencyId));
    const after = await actual();
    expect(after).toMatchObject({
      tour_search_grams: 0,
      webhook_deliveries: 0,
      webhook_attempts: 0,
      idempotency_marks: 0,
    });
    expect(await counters()).toEqual(after);
  });

  it("never refuses the platform's own events, and the trigger names exactly those types", async () => {
    const t = await makeTenant();
    await makeListing(t);
    await setQuotas(t, { events: 0 });
    const insert = (type: string) =>
      db().run(sql`INSERT INTO ${events} (id, agency_id, event_type, api_version, timestamp, data)
        VALUES (${unique("evt")}, ${t.agencyId}, ${type}, '2026-11-01', 0, '{}')`);
    const refusal = await insert("listing.created").then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refusedResource(refusal), String(refusal)).toBe("events");
    const held = await eventsOf(t.agencyId);
    for (const type of UNREFUSED_EVENT_TYPES) await insert(type);
    expect(await eventsOf(t.agencyId)).toBe(held + UNREFUSED_EVENT_TYPES.length);
    expect(await usage(t.agencyId, "events")).toBe(held + UNREFUSED_EVENT_TYPES.length);
    const [trigger] = await db().all<{ sql: string }>(
      sql`SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'events_quota'`,
    );
    const exempt = /NOT IN \(([^)]*)\)/.exec(trigger!.sql)?.[1];
    expect(exempt?.split(",").map((s) => s.trim().replace(/'/g, ""))).toEqual([...UNREFUSED_EVENT_TYPES]);
  });
});
