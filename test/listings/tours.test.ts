import { describe, expect, it } from "vitest";
import { call, expectError, makeTenant, type Tenant } from "../support/harness";

const newTour = async (t: Tenant, address: string, extra: Record<string, unknown> = {}) => {
  const r = await call("/api/v1/tours", {
    key: t.key,
    body: { address, city: "Portside", state: "CA", zipcode: "94110", ...extra },
  });
  expect(r.status, r.text).toBe(201);
  return r.json;
};

describe("tours", () => {
  it("creates with the required fields and a minted tour_number; reads it back", async () => {
    const t = await makeTenant();
    const tour = await newTour(t, "12 Harbour Street", {
      price: 1250000,
      bedrooms: 3,
      images: [{ url: "https://cdn.example.com/a.jpg", caption: "Front" }],
    });
    expect(tour).toMatchObject({
      status: "active",
      price: 1250000,
      bedrooms: 3,
      zipcode: "94110",
      images: [{ url: "https://cdn.example.com/a.jpg", caption: "Front" }],
    });
    expect(tour.tour_number).toMatch(/^[a-z0-9]{8}$/);
    const got = await call(`/api/v1/tours/${tour.tour_number}`, { key: t.key });
    expect(got.json).toEqual(tour);
    expectError(
      await call("/api/v1/tours", { key: t.key, body: { address: "x", city: "y", state: "z" } }),
      422,
      "validation_missing_required",
    );
  });

  it("is confined to the agency: another agency's tour is tour_not_found", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const tour = await newTour(a, "1 Private Lane");
    expectError(await call(`/api/v1/tours/${tour.tour_number}`, { key: b.key }), 404, "tour_not_found");
    expectError(
      await call(`/api/v1/tours/${tour.tour_number}`, { method: "PUT", key: b.key, body: { status: "archived" } }),
      404,
      "tour_not_found",
    );
    expectError(
      await call(`/api/v1/tours/${tour.tour_number}`, { method: "DELETE", key: b.key }),
      404,
      "tour_not_found",
    );
    expect((await call("/api/v1/tours", { key: b.key })).json.total).toBe(0);
  });

  it("pages with total and pages, filters by status, searches the address", async () => {
    const t = await makeTenant();
    for (const addr of ["1 Harbour St", "2 Harbour St", "3 Hill Rd", "4 harbour view", "5 Bay Rd"])
      await newTour(t, addr);
    const p1 = await call("/api/v1/tours?limit=2", { key: t.key });
    expect(p1.json, p1.text).toMatchObject({ total: 5, page: 1, pages: 3 });
    expect(p1.json.tours).toHaveLength(2);
    expect(Object.keys(p1.json.tours[0]).sort()).toEqual([
      "address",
      "city",
      "created_at",
      "id",
      "state",
      "status",
      "tour_number",
      "version",
    ]);
    const p3 = await call("/api/v1/tours?limit=2&page=3", { key: t.key });
    expect(p3.json.tours).toHaveLength(1);
    const all = [
      ...p1.json.tours,
      ...(await call("/api/v1/tours?limit=2&page=2", { key: t.key })).json.tours,
      ...p3.json.tours,
    ];
    expect(new Set(all.map((x: any) => x.tour_number)).size).toBe(5);
    const search = await call("/api/v1/tours?search=HARBOUR", { key: t.key });
    expect(search.json.total).toBe(3);
    expect(search.json.tours.map((x: any) => x.address).sort()).toEqual([
      "1 Harbour St",
      "2 Harbour St",
      "4 harbour view",
    ]);
    expect((await call("/api/v1/tours?search=%25%25%25", { key: t.key })).json.total).toBe(0);
    const first = all[0];
    await call(`/api/v1/tours/${first.tour_number}`, { method: "PUT", key: t.key, body: { status: "archived" } });
    expect(
      (await call("/api/v1/tours?status=archived", { key: t.key })).json.tours.map((x: any) => x.tour_number),
    ).toEqual([first.tour_number]);
    expect((await call("/api/v1/tours?page=9", { key: t.key })).json).toMatchObject({ tours: [], total: 5, page: 9 });
    expectError(await call("/api/v1/tours?limit=101", { key: t.key }), 422, "request_query_invalid");
  });

  it("reaches at most 10,000 rows deep and searches at least 3 characters; within both, answers as before", async () => {
    const t = await makeTenant();
    await newTour(t, "1 Harbour St");
    const list = (query: string) => call(`/api/v1/tours?${query}`, { key: t.key });
    for (const query of ["page=101&limit=100", "page=10000", "page=501&limit=20", "limit=100&page=10000"]) {
      const r = await list(query);
      expectError(r, 422, "request_query_invalid");
      expect(r.json.error.message).toContain("10000");
      expect(r.json.error.details.errors[0]).toMatchObject({ field: "page", ctx: { maximum: 10_000 } });
    }
    for (const search of ["h", "ha", "%25"]) expectError(await list(`search=${search}`), 422, "request_query_invalid");
    expect((await list("page=100&limit=100")).json).toMatchObject({ tours: [], total: 1, page: 100, pages: 1 });
    expect((await list("page=500")).json).toMatchObject({ tours: [], total: 1, page: 500 });
    expect((await list("search=har")).json.total).toBe(1);
  });

  it("updates status, price or description; needs at least one", async () => {
    const t = await makeTenant();
    const tour = await newTour(t, "9 Update Ave", { price: 100, description: "old" });
    const r = await call(`/api/v1/tours/${tour.tour_number}`, {
      method: "PUT",
      key: t.key,
      body: { price: 200, description: null },
    });
    expect(r.json, r.text).toMatchObject({ price: 200, description: null, status: "active" });
    expectError(
      await call(`/api/v1/tours/${tour.tour_number}`, { method: "PUT", key: t.key, body: {} }),
      422,
      "validation_missing_required",
    );
    expectError(
      await call(`/api/v1/tours/${tour.tour_number}`, { method: "PUT", key: t.key, body: { status: "gone" } }),
      422,
      "validation_enum_not_allowed",
    );
    expectError(
      await call(`/api/v1/tours/${tour.tour_number}`, { method: "PUT", key: t.key, body: { address: "moved" } }),
      422,
      "validation_unknown_field",
    );
  });

  it("an update that sends only the values a tour already has keeps its version", async () => {
    const t = await makeTenant();
    const tour = await newTour(t, "11 Same Street", { price: 100, description: "kept" });
    const path = `/api/v1/tours/${tour.tour_number}`;
    const before = await call(path, { key: t.key });
    const same = await call(path, { method: "PUT", key: t.key, body: { price: 100, description: "kept" } });
    expect(same.status, same.text).toBe(200);
    expect(same.headers.get("etag")).toBe(before.headers.get("etag"));
    expect(same.json.updated_at).toBe(before.json.updated_at);
    const changed = await call(path, { method: "PUT", key: t.key, body: { price: 100, description: "new" } });
    expect(changed.json, changed.text).toMatchObject({ price: 100, description: "new" });
    expect(changed.headers.get("etag")).not.toBe(before.headers.get("etag"));
  });

  it("deletes with 204 and no body; a replay answers 204 again", async () => {
    const t = await makeTenant();
    const tour = await newTour(t, "8 Delete Dr");
    const del = await call(`/api/v1/tours/${tour.tour_number}`, {
      method: "DELETE",
      key: t.key,
      idempotencyKey: "del-1",
    });
    expect(del.status).toBe(204);
    expect(del.text).toBe("");
    const replay = await call(`/api/v1/tours/${tour.tour_number}`, {
      method: "DELETE",
      key: t.key,
      idempotencyKey: "del-1",
    });
    expect(replay.status).toBe(204);
    expect(replay.headers.get("X-Idempotent-Replay")).toBe("true");
    expectError(await call(`/api/v1/tours/${tour.tour_number}`, { key: t.key }), 404, "tour_not_found");
  });

  it("needs tours:read and tours:write", async () => {
    const t = await makeTenant({ scopes: ["listings:read"] });
    expectError(await call("/api/v1/tours", { key: t.key }), 403, "auth.scope_denied");
    expectError(
      await call("/api/v1/tours", { key: t.key, body: { address: "a", city: "b", state: "c", zipcode: "d" } }),
      403,
      "auth.scope_denied",
    );
  });
});
