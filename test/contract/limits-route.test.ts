import { describe, expect, it } from "vitest";
import { DEFAULT_BUDGETS, ENDPOINT_NAMES } from "../../src/domain/budgets";
import { QUOTA_RESOURCE_NAMES } from "../../src/domain/quotas";
import { call, expectError, internal, makeListing, makePlatformKey, makeTenant } from "../support/harness";

const limits = async (key: string) => {
  const r = await call("/api/v1/limits", { key });
  expect(r.status, r.text).toBe(200);
  return r.json;
};

describe("GET /api/v1/limits", () => {
  it("shows each budget's window shrinking with calls to its endpoint, and costs only its own budget", async () => {
    const t = await makeTenant();
    const fresh = await limits(t.key);
    expect(fresh.key_id).toBe(t.keyId);
    expect(Object.keys(fresh.budgets).sort()).toEqual([...ENDPOINT_NAMES].sort());
    expect(fresh.budgets.create_listing, JSON.stringify(fresh)).toMatchObject({
      limit: DEFAULT_BUDGETS.create_listing,
      remaining: DEFAULT_BUDGETS.create_listing,
    });

    for (let i = 0; i < 3; i++) await makeListing(t);
    const list = await call("/api/v1/listings", { key: t.key });
    expect(list.status, list.text).toBe(200);
    const after = await limits(t.key);
    expect(after.budgets.create_listing.remaining).toBe(DEFAULT_BUDGETS.create_listing - 3);
    expect(after.budgets.read_listings_list.remaining).toBe(Number(list.headers.get("x-rate-limit-remaining")));
    expect(after.budgets.create_listing.reset).toBeGreaterThanOrEqual(Math.floor(Date.now() / 1000));

    // Reading the limits again counts in its own window, read_limits, and changes no other.
    const again = await call("/api/v1/limits", { key: t.key });
    expect(again.headers.get("x-rate-limit-limit")).toBe(String(DEFAULT_BUDGETS.read_limits));
    expect(again.json.budgets.read_limits.remaining).toBe(after.budgets.read_limits.remaining - 1);
    expect(Number(again.headers.get("x-rate-limit-remaining"))).toBe(again.json.budgets.read_limits.remaining);
    // (An empty window's reset is "now", so only what is counted is compared.)
    const counted = (budgets: Record<string, { limit: number; remaining: number }>) =>
      Object.fromEntries(
        Object.entries(budgets)
          .filter(([name]) => name !== "read_limits")
          .map(([name, w]) => [name, [w.limit, w.remaining]]),
      );
    expect(counted(again.json.budgets)).toEqual(counted(after.budgets));
    const next = await call("/api/v1/listings", { key: t.key });
    expect(Number(next.headers.get("x-rate-limit-remaining"))).toBe(after.budgets.read_listings_list.remaining - 1);
  });

  it("shows the key's own overrides, and the agency's quotas with their usage", async () => {
    const t = await makeTenant();
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    const set = await call(`/api/v1/admin/api-keys/${t.keyId}/rate-limits`, {
      method: "PATCH",
      key: admin.key,
      body: { overrides: { upload_media: 5 } },
    });
    expect(set.status, set.text).toBe(200);
    for (let i = 0; i < 2; i++) await makeListing(t);
    const q = await internal(`/internal/v1/agencies/${t.agencyId}/quotas`, {
      method: "PATCH",
      body: { quotas: { listings: 10 } },
    });
    expect(q.status, q.text).toBe(200);

    const body = await limits(t.key);
    expect(body.budgets.upload_media).toMatchObject({ limit: 5, remaining: 5 });
    expect(Object.keys(body.quotas).sort()).toEqual([...QUOTA_RESOURCE_NAMES].sort());
    expect(body.quotas.listings).toEqual({ unit: "rows", limit: 10, used: 2, remaining: 8 });
    // makeTenant made 4 users; makePlatformKey minted a second key for the agency.
    expect(body.quotas.users).toMatchObject({ unit: "rows", used: 4, limit: 10_000 });
    expect(body.quotas.api_keys).toMatchObject({ used: 2 });
    expect(body.quotas.listing_bytes.used).toBeGreaterThan(0);

    // Another key of the agency has its own windows, and the same quotas.
    const other = await limits(admin.key);
    expect(other.key_id).toBe(admin.keyId);
    expect(other.budgets.upload_media.limit).toBe(DEFAULT_BUDGETS.upload_media);
    expect(other.budgets.create_listing.remaining).toBe(DEFAULT_BUDGETS.create_listing);
    expect(other.quotas).toEqual(body.quotas);
  });

  it("is open to any valid key, whatever its scopes, and to no one without one", async () => {
    const t = await makeTenant({ scopes: ["users:read"] });
    const body = await limits(t.key);
    expect(body.key_id).toBe(t.keyId);
    expectError(await call("/api/v1/limits"), 401, "api_key_missing");
  });
});

describe("GET /api/v1/me", () => {
  it("answers the calling key: its agency, mode, role, scopes and budgets, within a budget of its own", async () => {
    const t = await makeTenant({ scopes: ["users:read", "listings:read"] });
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    const set = await call(`/api/v1/admin/api-keys/${t.keyId}/rate-limits`, {
      key: admin.key,
      method: "PATCH",
      body: { overrides: { upload_media: 5 } },
    });
    expect(set.status, set.text).toBe(200);
    const me = await call("/api/v1/me", { key: t.key });
    expect(me.status, me.text).toBe(200);
    const agency = await internal(`/internal/v1/agencies/${t.agencyId}`);
    expect(me.json).toMatchObject({
      key_id: t.keyId,
      agency: { id: t.agencyId, name: agency.json.name, kind: agency.json.kind },
      mode: "test",
      scopes: ["listings:read", "users:read"],
    });
    expect(me.json.role).toBeTypeOf("string");
    expect(me.json.budgets.upload_media).toBe(5);
    expect(me.json.budgets.create_listing).toBe(DEFAULT_BUDGETS.create_listing);
    expect(Object.keys(me.json.budgets).sort()).toEqual([...ENDPOINT_NAMES].sort());
    expect(me.headers.get("x-rate-limit-limit")).toBe(String(DEFAULT_BUDGETS.read_identity));
    const again = await call("/api/v1/me", { key: t.key });
    expect(Number(again.headers.get("x-rate-limit-remaining"))).toBe(
      Number(me.headers.get("x-rate-limit-remaining")) - 1,
    );
    expectError(await call("/api/v1/me"), 401, "api_key_missing");
  });
});
