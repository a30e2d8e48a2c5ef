import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { webhookEndpoints } from "../../src/db/schema";
import {
  call,
  db,
  direct,
  expectError,
  internal,
  keyed,
  makeListing,
  makeTenant,
  type Tenant,
  unique,
} from "../support/harness";

const newTour = async (t: Tenant) => {
  const r = await call("/api/v1/tours", {
    key: t.key,
    body: { address: `${unique("tour")} Harbour Street`, city: "Portside", state: "CA", zipcode: "94110" },
  });
  expect(r.status, r.text).toBe(201);
  return r.json as { tour_number: string; version: number };
};

const newEndpoint = async (t: Tenant) => {
  const r = await call("/api/v1/webhooks/endpoints", {
    key: t.key,
    body: { url: `https://hooks.example.com/${unique("mirror")}` },
  });
  expect(r.status, r.text).toBe(201);
  return r.json as { id: string; version: number };
};

const read = (t: Tenant, path: string, headers: Record<string, string> = {}) => call(path, { key: t.key, headers });

/** GET `path`: 200 with an ETag that names the body's version. */
async function etagOf(t: Tenant, path: string): Promise<{ etag: string; version: number }> {
  const r = await read(t, path);
  expect(r.status, r.text).toBe(200);
  const version = r.json.version;
  expect(Number.isInteger(version) && version >= 1, r.text).toBe(true);
  expect(r.headers.get("etag"), r.text).toBe(`"v${version}"`);
  return { etag: r.headers.get("etag")!, version };
}

const remaining = (r: { headers: Headers }) => Number(r.headers.get("x-rate-limit-remaining"));

describe("ETag and version on every single-resource GET", () => {
  it("answers a strong ETag built from the version on listings, users, tours and webhook endpoints", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const tour = await newTour(t);
    const endpoint = await newEndpoint(t);
    expect(listing.version).toBe(1);
    expect(tour.version).toBe(1);
    expect(endpoint.version).toBe(1);
    for (const path of [
      `/api/v1/listings/${listing.listing_number}`,
      `/api/v1/users/${t.agent.id}`,
      `/api/v1/tours/${tour.tour_number}`,
      `/api/v1/webhooks/endpoints/${endpoint.id}`,
    ]) {
      const { etag } = await etagOf(t, path);
      expect(etag, path).toMatch(/^"v[1-9][0-9]*"$/);
    }
  });

  it("raises a listing's version by one with each change, and each write answers the new ETag", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t, { activate: true });
    const path = `/api/v1/listings/${listing_number}`;
    let { version } = await etagOf(t, path);
    const changes = [
      { path: `${path}/status`, body: { new_status: "Active" } },
      { path: `${path}/sections/floorplan`, body: { operation: "set", url: "https://cdn.example.com/plans/a.pdf" } },
      { path: `${path}/sections/matterport`, body: { operation: "set", url: "https://my.matterport.com/show/?m=Sx1" } },
    ];
    for (const change of changes) {
      const w = await call(change.path, { key: t.key, method: "PATCH", body: change.body });
      expect(w.status, w.text).toBe(200);
      expect(w.json.version, change.path).toBe(version + 1);
      expect(w.headers.get("etag"), change.path).toBe(`"v${version + 1}"`);
      const after = await etagOf(t, path);
      expect(after.version, change.path).toBe(version + 1);
      version = after.version;
    }
    const cancelled = await call(`${path}/cancel`, { key: t.key, method: "POST", body: {} });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.json.version).toBe(version + 1);
    expect((await etagOf(t, path)).version).toBe(version + 1);
  });

  it("raises a tour's and a user's version with their changes", async () => {
    const t = await makeTenant();
    const tour = await newTour(t);
    const put = await call(`/api/v1/tours/${tour.tour_number}`, { key: t.key, method: "PUT", body: { price: 5 } });
    expect(put.status, put.text).toBe(200);
    expect(put.json.version).toBe(2);
    expect(put.headers.get("etag")).toBe('"v2"');
    expect((await etagOf(t, `/api/v1/tours/${tour.tour_number}`)).version).toBe(2);

    const user = `/api/v1/users/${t.agent.id}`;
    const before = await etagOf(t, user);
    const moved = await call(`/api/v1/test_helpers/users/${t.agent.id}/move`, {
      key: t.key,
      body: { manager_id: t.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json.version).toBe(before.version + 1);
    expect((await etagOf(t, user)).version).toBe(before.version + 1);
  });
});

describe("replays", () => {
  it("a replayed write answers the first answer's ETag with its body", async () => {
    const t = await makeTenant();
    const tour = await newTour(t);
    const path = `/api/v1/tours/${tour.tour_number}`;
    const idempotencyKey = crypto.randomUUID();
    const first = await call(path, { key: t.key, method: "PUT", body: { price: 7 }, idempotencyKey });
    expect(first.status, first.text).toBe(200);
    await call(path, { key: t.key, method: "PUT", body: { price: 8 } });
    const again = await call(path, { key: t.key, method: "PUT", body: { price: 7 }, idempotencyKey });
    expect(again.headers.get("x-idempotent-replay")).toBe("true");
    expect(again.json).toEqual(first.json);
    expect(again.headers.get("etag")).toBe('"v2"');
    expect((await etagOf(t, path)).version).toBe(3);
  });
});

describe("If-None-Match", () => {
  it("answers 304 with no body and the ETag when a listed tag matches (weak comparison, lists, *)", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const path = `/api/v1/listings/${listing_number}`;
    const { etag } = await etagOf(t, path);
    for (const value of [etag, `W/${etag}`, `"v999", ${etag}`, "*"]) {
      const r = await read(t, path, { "If-None-Match": value });
      expect(r.status, `${value}: ${r.text}`).toBe(304);
      expect(r.text).toBe("");
      expect(r.headers.get("etag")).toBe(etag);
      expect(r.headers.get("x-request-id")).toMatch(/^req_/);
      expect(r.headers.get("content-type")).toBeNull();
      expect(r.headers.get("x-rate-limit-limit")).toMatch(/^\d+$/);
    }
    for (const value of ['"v999"', "v1", '"v1', ""]) {
      const r = await read(t, path, { "If-None-Match": value });
      expect(r.status, `${value}: ${r.text}`).toBe(200);
      expect(r.json.listing_number).toBe(listing_number);
      expect(r.headers.get("etag")).toBe(etag);
    }
  });

  it("answers 304 on users, tours and webhook endpoints too, and 200 once the resource changed", async () => {
    const t = await makeTenant();
    const tour = await newTour(t);
    const endpoint = await newEndpoint(t);
    for (const path of [
      `/api/v1/users/${t.agent.id}`,
      `/api/v1/tours/${tour.tour_number}`,
      `/api/v1/webhooks/endpoints/${endpoint.id}`,
    ]) {
      const { etag } = await etagOf(t, path);
      const r = await read(t, path, { "If-None-Match": etag });
      expect(r.status, `${path}: ${r.text}`).toBe(304);
      expect(r.text).toBe("");
    }
    await db().update(webhookEndpoints).set({ description: "changed" }).where(eq(webhookEndpoints.id, endpoint.id));
    const changed = await read(t, `/api/v1/webhooks/endpoints/${endpoint.id}`, { "If-None-Match": '"v1"' });
    expect(changed.status, changed.text).toBe(200);
    expect(changed.headers.get("etag")).toBe('"v2"');
    expect(changed.json.description).toBe("changed");
  });

  it("a 304 costs no rate budget; an answer that is not 304 is counted", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const path = `/api/v1/listings/${listing_number}`;
    const first = await read(t, path);
    const { etag } = { etag: first.headers.get("etag")! };
    const left = remaining(first);
    for (let i = 0; i < 3; i++) {
      const r = await read(t, path, { "If-None-Match": etag });
      expect(r.status, r.text).toBe(304);
      expect(remaining(r)).toBe(left);
    }
    const stale = await read(t, path, { "If-None-Match": '"v999"' });
    expect(stale.status, stale.text).toBe(200);
    expect(remaining(stale)).toBe(left - 1);
    const missing = await read(t, "/api/v1/listings/zzzzzzz", { "If-None-Match": etag });
    expectError(missing, 404, "listing_not_found");
    expect(remaining(missing)).toBe(left - 2);
    const plain = await read(t, path);
    expect(remaining(plain)).toBe(left - 3);
  });

  it("a conditional read refused before the handler (scope) is counted like any refused read", async () => {
    const owner = await makeTenant();
    const { listing_number } = await makeListing(owner);
    const t = await makeTenant({ scopes: ["tours:read"] });
    const path = `/api/v1/listings/${listing_number}`;
    const first = await read(t, path, { "If-None-Match": "*" });
    expectError(first, 403, "auth.scope_denied");
    const second = await read(t, path, { "If-None-Match": "*" });
    expectError(second, 403, "auth.scope_denied");
    expect(remaining(second)).toBe(remaining(first) - 1);
  });

  it("a key at its limit still gets 304, while an unconditional or non-matching GET is 429", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const path = `/api/v1/listings/${listing_number}`;
    const set = await internal(`/internal/v1/api-keys/${t.keyId}`, {
      method: "PATCH",
      body: { rate_limit_overrides: { read_listing_single: 1 } },
    });
    expect(set.status, set.text).toBe(200);
    const only = await read(t, path);
    expect(only.status, only.text).toBe(200);
    const etag = only.headers.get("etag")!;
    expect(remaining(only)).toBe(0);
    expectError(await read(t, path), 429, "rate_limit_exceeded");
    const notModified = await read(t, path, { "If-None-Match": etag });
    expect(notModified.status, notModified.text).toBe(304);
    expect(notModified.headers.get("x-rate-limit-limit")).toBe("1");
    expect(remaining(notModified)).toBe(0);
    const refused = await read(t, path, { "If-None-Match": '"v999"' });
    expectError(refused, 429, "rate_limit_exceeded");
    expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(refused.headers.get("etag")).toBeNull();
    expect(refused.json.error.details.endpoint).toBe("read_listing_single");
  });
});

describe("conditional reads and the budget", () => {
  const limitTo = async (t: Tenant, n: number) => {
    const set = await internal(`/internal/v1/api-keys/${t.keyId}`, {
      method: "PATCH",
      body: { rate_limit_overrides: { read_listing_single: n } },
    });
    expect(set.status, set.text).toBe(200);
  };

  it("If-None-Match: * is counted like any read, and refused at the limit", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const path = `/api/v1/listings/${listing_number}`;
    await limitTo(t, 3);
    const first = await read(t, path, { "If-None-Match": "*" });
    expect(first.status, first.text).toBe(304);
    expect(remaining(first)).toBe(2);
    const second = await read(t, path, { "If-None-Match": "*" });
    expect(remaining(second)).toBe(1);
    await read(t, path, { "If-None-Match": "*" });
    expectError(await read(t, path, { "If-None-Match": "*" }), 429, "rate_limit_exceeded");
  });

  it("at the limit, a tag that does not match is refused before the handler reads the resource", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const path = `/api/v1/listings/${listing_number}`;
    await limitTo(t, 1);
    const only = await read(t, path);
    expect(only.status, only.text).toBe(200);
    const queries: string[] = [];
    const DB = sessionsSeen(queries);
    const refused = await direct(keyed(path, t.key, { headers: { "If-None-Match": '"v999"' } }), { DB });
    expectError(refused, 429, "rate_limit_exceeded");
    const listingReads = queries.filter((q) => /from "listings"/.test(q));
    expect(listingReads, listingReads.join("\n")).toHaveLength(1);
    expect(listingReads[0]).toMatch(/^select "version" from "listings"/);
    // A matching tag is still answered 304 from the version alone, at no cost.
    queries.length = 0;
    const same = await direct(keyed(path, t.key, { headers: { "If-None-Match": only.headers.get("etag")! } }), { DB });
    expect(same.status, same.text).toBe(304);
    expect(same.headers.get("etag")).toBe(only.headers.get("etag"));
    expect(queries.filter((q) => /from "listings"/.test(q)).every((q) => /^select "version"/.test(q))).toBe(true);
  });
});

/** The D1 binding, with the statements of every session it opens noted in `queries`. */
function sessionsSeen(queries: string[]): D1Database {
  const real = env.DB;
  return new Proxy(real, {
    get(target, prop) {
      if (prop !== "withSession") {
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (constraint: string) => {
        const session = target.withSession(constraint);
        return {
          prepare(sql: string) {
            queries.push(sql);
            return session.prepare(sql);
          },
          batch: (statements: D1PreparedStatement[]) => session.batch(statements),
          getBookmark: () => session.getBookmark(),
        };
      };
    },
  });
}

interface IfMatchRoute {
  name: string;
  /** Makes a fresh resource: where to send the write, where to read it back, and a change made by someone else. */
  setup(t: Tenant): Promise<{ write: string; readPath: string; changeElsewhere(): Promise<void> }>;
  method: "PATCH" | "PUT" | "DELETE";
  /** Successive bodies (each must change something). */
  bodies: unknown[];
}

const listingRoute = (name: string, suffix: string, bodies: unknown[]): IfMatchRoute => ({
  name,
  method: "PATCH",
  bodies,
  async setup(t) {
    const { listing_number } = await makeListing(t, { activate: true });
    const readPath = `/api/v1/listings/${listing_number}`;
    return {
      write: `${readPath}/${suffix}`,
      readPath,
      async changeElsewhere() {
        const r = await call(`${readPath}/sections/floorplan`, {
          key: t.key,
          method: "PATCH",
          body: { operation: "append", url: `https://cdn.example.com/plans/${unique("p")}.pdf` },
        });
        expect(r.status, r.text).toBe(200);
      },
    };
  },
});

const ROUTES: IfMatchRoute[] = [
  listingRoute("PATCH listing status", "status", [
    { new_status: "Active" },
    { new_status: "Pending" },
    { new_status: "Sold" },
  ]),
  listingRoute("PATCH floorplan", "sections/floorplan", [
    { operation: "set", url: "https://cdn.example.com/plans/1.pdf" },
    { operation: "set", url: "https://cdn.example.com/plans/2.pdf" },
    { operation: "set", url: "https://cdn.example.com/plans/3.pdf" },
  ]),
  listingRoute("PATCH matterport", "sections/matterport", [
    { operation: "set", url: "https://my.matterport.com/show/?m=A1" },
    { operation: "set", url: "https://my.matterport.com/show/?m=B2" },
    { operation: "set", url: "https://my.matterport.com/show/?m=C3" },
  ]),
  {
    name: "PUT tour",
    method: "PUT",
    bodies: [{ price: 100 }, { price: 200 }, { price: 300 }],
    async setup(t) {
      const tour = await newTour(t);
      const readPath = `/api/v1/tours/${tour.tour_number}`;
      return {
        write: readPath,
        readPath,
        async changeElsewhere() {
          const r = await call(readPath, { key: t.key, method: "PUT", body: { description: unique("d") } });
          expect(r.status, r.text).toBe(200);
        },
      };
    },
  },
  {
    name: "DELETE tour",
    method: "DELETE",
    bodies: [undefined],
    async setup(t) {
      const tour = await newTour(t);
      const readPath = `/api/v1/tours/${tour.tour_number}`;
      return {
        write: readPath,
        readPath,
        async changeElsewhere() {
          const r = await call(readPath, { key: t.key, method: "PUT", body: { description: unique("d") } });
          expect(r.status, r.text).toBe(200);
        },
      };
    },
  },
  {
    name: "DELETE webhook endpoint",
    method: "DELETE",
    bodies: [undefined],
    async setup(t) {
      const endpoint = await newEndpoint(t);
      const readPath = `/api/v1/webhooks/endpoints/${endpoint.id}`;
      return {
        write: readPath,
        readPath,
        async changeElsewhere() {
          await db()
            .update(webhookEndpoints)
            .set({ description: unique("d") })
            .where(eq(webhookEndpoints.id, endpoint.id));
        },
      };
    },
  },
];

const send = (t: Tenant, route: IfMatchRoute, path: string, body: unknown, ifMatch?: string) =>
  call(path, {
    key: t.key,
    method: route.method,
    ...(body === undefined ? {} : { body }),
    headers: ifMatch === undefined ? {} : { "If-Match": ifMatch },
  });

describe.each(ROUTES)("If-Match on $name", (route) => {
  it("a stale version is 412 resource_version_mismatch and writes nothing", async () => {
    const t = await makeTenant();
    const r = await route.setup(t);
    const old = await etagOf(t, r.readPath);
    await r.changeElsewhere();
    const current = await read(t, r.readPath);
    const refused = await send(t, route, r.write, route.bodies[0], old.etag);
    expectError(refused, 412, "resource_version_mismatch");
    expect(refused.json.error.details).toEqual({ expected: old.etag, current: current.headers.get("etag") });
    const after = await read(t, r.readPath);
    expect(after.status, after.text).toBe(200);
    expect(after.json, "nothing was written").toEqual(current.json);
  });

  it("the current version writes and answers the new ETag; * matches any existing version", async () => {
    const t = await makeTenant();
    const r = await route.setup(t);
    const { etag, version } = await etagOf(t, r.readPath);
    const ok = await send(t, route, r.write, route.bodies[0], `"v999", ${etag}`);
    if (route.method === "DELETE") {
      expect(ok.status, ok.text).toBe(204);
      expect((await read(t, r.readPath)).status).toBe(404);
      const other = await route.setup(t);
      const any = await send(t, route, other.write, undefined, "*");
      expect(any.status, any.text).toBe(204);
      expect((await read(t, other.readPath)).status).toBe(404);
      const gone = await send(t, route, other.write, undefined, "*");
      expect(gone.status, gone.text).toBe(404);
      return;
    }
    expect(ok.status, ok.text).toBe(200);
    expect(ok.headers.get("etag")).toBe(`"v${version + 1}"`);
    expect(ok.json.version).toBe(version + 1);
    const any = await send(t, route, r.write, route.bodies[1], "*");
    expect(any.status, any.text).toBe(200);
    expect(any.headers.get("etag")).toBe(`"v${version + 2}"`);
    // A weak tag never matches under If-Match's strong comparison, and the answer says so, naming the tag sent.
    const weak = await send(t, route, r.write, route.bodies[2], `W/"v${version + 2}"`);
    expectError(weak, 412, "resource_version_mismatch");
    expect(weak.json.error.details).toEqual({ expected: `W/"v${version + 2}"`, current: `"v${version + 2}"` });
    expect(weak.json.error.message).toMatch(/weak tag .* never matches/);
    expect(weak.json.error.message).toContain(`"v${version + 2}"`);
  });

  it("a malformed If-Match is 400 if_match_malformed and writes nothing", async () => {
    const t = await makeTenant();
    const r = await route.setup(t);
    const before = await read(t, r.readPath);
    for (const value of ["v1", '"v1', "v1, *", '"v1" "v2"']) {
      const refused = await send(t, route, r.write, route.bodies[0], value);
      expectError(refused, 400, "if_match_malformed");
    }
    const after = await read(t, r.readPath);
    expect(after.json).toEqual(before.json);
  });
});

describe("If-Match and idempotency", () => {
  it("is part of the request: a corrected precondition under the same key is a conflict, not the 412 again", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const path = `/api/v1/listings/${l.listing_number}/sections/matterport`;
    const { etag } = await etagOf(t, `/api/v1/listings/${l.listing_number}`);
    const body = { operation: "set", url: "https://my.matterport.com/show/?m=precondition" };
    const idempotencyKey = crypto.randomUUID();
    const stale = await call(path, {
      key: t.key,
      method: "PATCH",
      body,
      idempotencyKey,
      headers: { "If-Match": '"v999"' },
    });
    expectError(stale, 412, "resource_version_mismatch");
    // The same request again is the same answer.
    const again = await call(path, {
      key: t.key,
      method: "PATCH",
      body,
      idempotencyKey,
      headers: { "If-Match": '"v999"' },
    });
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(again.status).toBe(412);
    // A corrected If-Match under that key is another request.
    const corrected = await call(path, {
      key: t.key,
      method: "PATCH",
      body,
      idempotencyKey,
      headers: { "If-Match": etag },
    });
    expectError(corrected, 409, "idempotency_key_conflict");
    const fresh = await call(path, { key: t.key, method: "PATCH", body, headers: { "If-Match": etag } });
    expect(fresh.status, fresh.text).toBe(200);
  });
});

describe("If-Match on a missing resource", () => {
  it("stays 404", async () => {
    const t = await makeTenant();
    expectError(
      await call("/api/v1/tours/zzzzzzzz", {
        key: t.key,
        method: "PUT",
        body: { price: 1 },
        headers: { "If-Match": '"v1"' },
      }),
      404,
      "tour_not_found",
    );
  });
});
