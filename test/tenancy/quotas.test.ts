import { and, count, eq, sql } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import {
  apiKeys,
  appointments,
  idempotencyMarks,
  listings,
  mediaUploads,
  tourSearchGrams,
  tours,
  users,
} from "../../src/db/schema";
import { call, db, expectError, internal, makeListing, makeTenant, type Tenant, unique } from "../support/harness";
import { setQuotas, usage } from "../support/quota-kit";

const rowsOf = async (table: typeof tours | typeof listings | typeof mediaUploads, agencyId: string) =>
  (await db().select({ n: count() }).from(table).where(eq(table.agencyId, agencyId)))[0]!.n;

const gramsOf = async (agencyId: string) =>
  (await db().select({ n: count() }).from(tourSearchGrams).where(eq(tourSearchGrams.agencyId, agencyId)))[0]!.n;

const tourBody = (extra: Record<string, unknown> = {}) => ({
  address: `${unique("addr")} Harbour Street`,
  city: "Portside",
  state: "CA",
  zipcode: "94110",
  ...extra,
});
const createTour = (t: Tenant, extra: Record<string, unknown> = {}, idempotencyKey?: string) =>
  call("/api/v1/tours", { key: t.key, body: tourBody(extra), idempotencyKey });

/** The bytes a tour created with `tourBody` and these extras counts against tour_bytes. */
const utf8 = (s: string) => new TextEncoder().encode(s).length;

describe("tour quotas", () => {
  it("refuse the tour that would pass the count, storing nothing (no tour, no grams, no mark)", async () => {
    const t = await makeTenant();
    expect((await createTour(t)).status).toBe(201);
    await setQuotas(t, { tours: 2 });
    expect((await createTour(t)).status).toBe(201);
    const toursBefore = await rowsOf(tours, t.agencyId);
    const gramsBefore = await gramsOf(t.agencyId);
    const refused = await createTour(t, {}, "the-third-tour");
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details, refused.text).toEqual({ resource: "tours", limit: 2, usage: 2 });
    expect(await rowsOf(tours, t.agencyId)).toBe(toursBefore);
    expect(toursBefore).toBe(2);
    expect(await gramsOf(t.agencyId)).toBe(gramsBefore);
    expect(await usage(t.agencyId, "tours")).toBe(2);
    const marks = await db()
      .select()
      .from(idempotencyMarks)
      .where(and(eq(idempotencyMarks.agencyId, t.agencyId), eq(idempotencyMarks.idemKey, "the-third-tour")))
      .all();
    expect(marks).toEqual([]);
  });

  it("hold under concurrent creates: with room for N-2, exactly N-2 of N succeed", async () => {
    const t = await makeTenant();
    const n = 8;
    await setQuotas(t, { tours: n - 2 });
    const results = await Promise.all(Array.from({ length: n }, () => createTour(t)));
    const created = results.filter((r) => r.status === 201);
    expect(created, JSON.stringify(results.map((r) => r.json))).toHaveLength(n - 2);
    for (const r of results.filter((x) => x.status !== 201)) expectError(r, 409, "agency_quota_exceeded");
    expect(await rowsOf(tours, t.agencyId)).toBe(n - 2);
    expect(await usage(t.agencyId, "tours")).toBe(n - 2);
  });

  it("count bytes: full tour bytes refuse creates and growing updates; another agency is unaffected", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const description = "d".repeat(1_000);
    const first = await createTour(t, { description });
    expect(first.status, first.text).toBe(201);
    const oneTour = await usage(t.agencyId, "tour_bytes");
    const a = first.json;
    expect(oneTour).toBe(
      utf8(a.address) + utf8(a.city) + utf8(a.state) + utf8(a.zipcode) + description.length + utf8("[]"),
    );
    // Room for two more such tours and a little.
    await setQuotas(t, { tour_bytes: oneTour * 3 + 100 });
    expect((await createTour(t, { description })).status).toBe(201);
    expect((await createTour(t, { description })).status).toBe(201);
    const toursBefore = await rowsOf(tours, t.agencyId);
    const gramsBefore = await gramsOf(t.agencyId);
    const refused = await createTour(t, { description });
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details, refused.text).toMatchObject({
      resource: "tour_bytes",
      limit: oneTour * 3 + 100,
    });
    expect(refused.json.error.details.usage).toBe(await usage(t.agencyId, "tour_bytes"));
    expect(await rowsOf(tours, t.agencyId)).toBe(toursBefore);
    expect(await gramsOf(t.agencyId)).toBe(gramsBefore);

    // An update that grows past the quota is refused and changes nothing; one that shrinks is taken.
    const path = `/api/v1/tours/${a.tour_number}`;
    const grow = await call(path, { method: "PUT", key: t.key, body: { description: "g".repeat(1_200) } });
    expectError(grow, 409, "agency_quota_exceeded");
    const stored = await db().select().from(tours).where(eq(tours.id, a.id)).get();
    expect(stored?.description).toBe(description);
    const used = await usage(t.agencyId, "tour_bytes");
    const shrink = await call(path, { method: "PUT", key: t.key, body: { description: "short" } });
    expect(shrink.status, shrink.text).toBe(200);
    expect(await usage(t.agencyId, "tour_bytes")).toBe(used - description.length + 5);

    // The other agency writes as before.
    const elsewhere = await createTour(other, { description });
    expect(elsewhere.status, elsewhere.text).toBe(201);
  });

  it("deleting a tour frees its place and its bytes", async () => {
    const t = await makeTenant();
    await setQuotas(t, { tours: 1 });
    const first = await createTour(t, { description: "x".repeat(300) });
    expect(first.status, first.text).toBe(201);
    expectError(await createTour(t), 409, "agency_quota_exceeded");
    const del = await call(`/api/v1/tours/${first.json.tour_number}`, { method: "DELETE", key: t.key });
    expect(del.status, del.text).toBe(204);
    expect(await usage(t.agencyId, "tours")).toBe(0);
    expect(await usage(t.agencyId, "tour_bytes")).toBe(0);
    expect((await createTour(t)).status).toBe(201);
  });

  it("an override takes effect on the next write, and one below usage only blocks new writes", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 3; i++) expect((await createTour(t)).status).toBe(201);
    const lowered = await setQuotas(t, { tours: 1 });
    expect(lowered.quotas.tours, JSON.stringify(lowered)).toEqual({ unit: "rows", limit: 1, used: 3, remaining: 0 });
    expect(lowered.overridden).toEqual(["tours"]);
    const refused = await createTour(t);
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details).toEqual({ resource: "tours", limit: 1, usage: 3 });
    const list = await call("/api/v1/tours", { key: t.key });
    expect(list.json.total, list.text).toBe(3);
    const raised = await setQuotas(t, { tours: null });
    expect(raised.overridden).toEqual([]);
    expect(raised.quotas.tours.limit).toBe(100_000);
    expect((await createTour(t)).status).toBe(201);
  });
});

describe("listing quotas", () => {
  it("refuse the listing past the count, and a floorplan that would pass the listing bytes", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    await setQuotas(t, { listings: 1 });
    const before = await rowsOf(listings, t.agencyId);
    const refused = await call("/api/v1/listings", {
      key: t.key,
      body: { address: "1 Quay Road", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
    });
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details).toEqual({ resource: "listings", limit: 1, usage: 1 });
    expect(await rowsOf(listings, t.agencyId)).toBe(before);

    const bytes = await usage(t.agencyId, "listing_bytes");
    await setQuotas(t, { listing_bytes: bytes + 100 });
    const path = `/api/v1/listings/${l.listing_number}/sections/floorplan`;
    const long = await call(path, {
      method: "PATCH",
      key: t.key,
      body: { operation: "set", url: `https://cdn.example.com/${"p".repeat(200)}.pdf` },
    });
    expectError(long, 409, "agency_quota_exceeded");
    expect(long.json.error.details.resource).toBe("listing_bytes");
    const stored = await db().select().from(listings).where(eq(listings.listingNumber, l.listing_number)).get();
    expect(stored?.floorplanUrls).toEqual([]);
    expect(await usage(t.agencyId, "listing_bytes")).toBe(bytes);
  });
});

describe("quotas of uploads, users, keys and appointments", () => {
  it("media uploads", async () => {
    const t = await makeTenant();
    await setQuotas(t, { media_uploads: 1 });
    const photo = { asset_type: "photo", content_type: "image/jpeg", size_bytes: 1024 };
    const ok = await call("/api/v1/media/upload", { key: t.key, body: photo });
    expect(ok.status, ok.text).toBe(201);
    const refused = await call("/api/v1/media/upload", { key: t.key, body: photo });
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details).toEqual({ resource: "media_uploads", limit: 1, usage: 1 });
    expect(await rowsOf(mediaUploads, t.agencyId)).toBe(1);
  });

  it("bytes kept in storage: an upload that would pass them is refused, an aborted one frees them", async () => {
    const t = await makeTenant();
    await setQuotas(t, { media_bytes: 300_000_000 });
    const video = { asset_type: "video", content_type: "video/mp4", size_bytes: 200_000_000 };
    const first = await call("/api/v1/media/upload", { key: t.key, body: video });
    expect(first.status, first.text).toBe(201);
    expect(await usage(t.agencyId, "media_bytes")).toBe(200_000_000);
    const refused = await call("/api/v1/media/upload", { key: t.key, body: video });
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details).toEqual({ resource: "media_bytes", limit: 300_000_000, usage: 200_000_000 });
    expect(await rowsOf(mediaUploads, t.agencyId)).toBe(1);
    const limits = await call("/api/v1/limits", { key: t.key });
    expect(limits.json.quotas.media_bytes).toMatchObject({ unit: "bytes", limit: 300_000_000, used: 200_000_000 });
    const aborted = await call(`/api/v1/media/uploads/${first.json.upload_id}/abort`, { key: t.key, body: {} });
    expect(aborted.status, aborted.text).toBe(200);
    expect(await usage(t.agencyId, "media_bytes")).toBe(0);
    const again = await call("/api/v1/media/upload", { key: t.key, body: video });
    expect(again.status, again.text).toBe(201);
  });

  it("users and API keys, through the internal API", async () => {
    const t = await makeTenant();
    // makeTenant made 4 users and 1 key.
    await setQuotas(t, { users: 4, api_keys: 1 });
    const user = await internal("/internal/v1/users", {
      method: "POST",
      body: { manager_id: t.owner.id, role: "agent", name: "Fifth", email: `${unique("fifth")}@example.test` },
    });
    expectError(user, 409, "agency_quota_exceeded");
    expect(user.json.error.details).toEqual({ resource: "users", limit: 4, usage: 4 });
    expect((await db().select({ n: count() }).from(users).where(eq(users.agencyId, t.agencyId)))[0]!.n).toBe(4);
    const key = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: t.owner.id },
    });
    expectError(key, 409, "agency_quota_exceeded");
    expect(key.json.error.details).toEqual({ resource: "api_keys", limit: 1, usage: 1 });
    expect((await db().select({ n: count() }).from(apiKeys).where(eq(apiKeys.agencyId, t.agencyId)))[0]!.n).toBe(1);
  });

  it("appointments, through the sandbox test helper", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    await setQuotas(t, { appointments: 0 });
    const start = Date.now() + 72 * 3600_000;
    const r = await call(`/api/v1/test_helpers/listings/${l.listing_number}/appointments`, {
      key: t.key,
      body: { starts_at: new Date(start).toISOString(), ends_at: new Date(start + 3600_000).toISOString() },
    });
    expectError(r, 409, "agency_quota_exceeded");
    expect(r.json.error.details).toEqual({ resource: "appointments", limit: 0, usage: 0 });
    expect(
      (await db().select({ n: count() }).from(appointments).where(eq(appointments.agencyId, t.agencyId)))[0]!.n,
    ).toBe(0);
  });
});

describe("the usage report (npm run ops -- usage)", () => {
  it("gives rows and approximate bytes per table from the usage counters", async () => {
    const t = await makeTenant();
    await makeListing(t);
    const tour = await createTour(t, { description: "z".repeat(2_000) });
    expect(tour.status, tour.text).toBe(201);
    const r = await internal(`/internal/v1/usage?agency_id=${t.agencyId}`);
    expect(r.status, r.text).toBe(200);
    expect(r.json.next_cursor).toBe("");
    const [item] = r.json.data;
    expect(item.agency_id).toBe(t.agencyId);
    expect(item.tables.tours.rows).toBe(1);
    expect(item.tables.tours.approx_bytes).toBe((await usage(t.agencyId, "tour_bytes")) + 700);
    expect(item.tables.tour_search_grams.rows).toBe(await usage(t.agencyId, "tour_search_grams"));
    expect(item.tables.events.rows).toBe(await usage(t.agencyId, "events"));
    expect(item.tables.listings.rows).toBe(1);
    expect(item.tables.users.rows).toBe(4);
    expect(item.tables.api_keys.rows).toBe(1);
    expect(item.tables.media_uploads).toEqual({ rows: 0, approx_bytes: 0 });
    const tables = Object.values(item.tables) as { approx_bytes: number }[];
    expect(item.approx_bytes).toBe(tables.reduce((s, x) => s + x.approx_bytes, 0));

    const page = await internal("/internal/v1/usage?limit=2");
    expect(page.status, page.text).toBe(200);
    expect(page.json.data.length).toBeLessThanOrEqual(2);
    expectError(await internal("/internal/v1/usage?agency_id=agy_nope"), 404, "agency_not_found");
  });
});

describe("the usage counters", () => {
  it("stay equal to what the tables hold through creates, updates and deletes", async () => {
    const t = await makeTenant();
    const made = await Promise.all([createTour(t, { description: "é".repeat(50) }), createTour(t), createTour(t)]);
    for (const r of made) expect(r.status, r.text).toBe(201);
    const put = await call(`/api/v1/tours/${made[0]!.json.tour_number}`, {
      method: "PUT",
      key: t.key,
      body: { description: null },
    });
    expect(put.status, put.text).toBe(200);
    const del = await call(`/api/v1/tours/${made[1]!.json.tour_number}`, { method: "DELETE", key: t.key });
    expect(del.status, del.text).toBe(204);
    const l = await makeListing(t);
    const fp = await call(`/api/v1/listings/${l.listing_number}/sections/floorplan`, {
      method: "PATCH",
      key: t.key,
      body: { operation: "set", url: "https://cdn.example.com/plan.pdf" },
    });
    expect(fp.status, fp.text).toBe(200);

    const [actual] = await db().all<{ tours: number; tour_bytes: number; listing_bytes: number }>(sql`
      SELECT
        (SELECT count(*) FROM tours WHERE agency_id = ${t.agencyId}) AS tours,
        (SELECT sum(length(CAST(address AS BLOB)) + length(CAST(city AS BLOB)) + length(CAST(state AS BLOB))
          + length(CAST(zipcode AS BLOB)) + coalesce(length(CAST(mls_number AS BLOB)), 0)
          + coalesce(length(CAST(description AS BLOB)), 0) + length(CAST(images AS BLOB))
          + coalesce(length(CAST(virtual_tour_url AS BLOB)), 0)) FROM tours WHERE agency_id = ${t.agencyId}) AS tour_bytes,
        (SELECT sum(length(CAST(address AS BLOB)) + length(CAST(floorplan_urls AS BLOB))
          + coalesce(length(CAST(matterport_url AS BLOB)), 0)) FROM listings WHERE agency_id = ${t.agencyId})
          AS listing_bytes`);
    expect(actual!.tours).toBe(2);
    expect(await usage(t.agencyId, "tours")).toBe(actual!.tours);
    expect(await usage(t.agencyId, "tour_bytes")).toBe(actual!.tour_bytes);
    expect(await usage(t.agencyId, "listing_bytes")).toBe(actual!.listing_bytes);
    expect(await usage(t.agencyId, "listings")).toBe(1);
  });
});

describe("the users counter across a move", () => {
  it("moves with the people who change agency, subtree included", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const usersOf = async (agencyId: string) =>
      (await db().select({ n: count() }).from(users).where(eq(users.agencyId, agencyId)))[0]!.n;
    const before = { a: await usersOf(a.agencyId), b: await usersOf(b.agencyId) };
    expect(await usage(a.agencyId, "users")).toBe(before.a);
    const moved = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    const after = { a: await usersOf(a.agencyId), b: await usersOf(b.agencyId) };
    expect(after.a).toBeLessThan(before.a);
    expect(after.b - before.b).toBe(before.a - after.a);
    expect(await usage(a.agencyId, "users")).toBe(after.a);
    expect(await usage(b.agencyId, "users")).toBe(after.b);
  });
});
