import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { changeKey, keyGate } from "../../src/accounts/key-changes";
import { apiKeys } from "../../src/db/schema";
import { sha256Hex } from "../../src/lib/ids";
import { call, db, direct, expectError, internal, keyed, makePlatformKey, makeTenant } from "../support/harness";

async function setOverrides(t: { agencyId: string; keyId: string }, overrides: Record<string, number | null>) {
  const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
  const r = await call(`/api/v1/admin/api-keys/${t.keyId}/rate-limits`, {
    method: "PATCH",
    key: admin.key,
    body: { overrides },
  });
  expect(r.status, r.text).toBe(200);
  return r;
}

describe("rate-limit headers", () => {
  it("every response of a rate-limited route carries the three headers, counting down", async () => {
    const t = await makeTenant();
    const first = await call("/api/v1/users", { key: t.key });
    const second = await call("/api/v1/users", { key: t.key });
    expect(first.headers.get("X-Rate-Limit-Limit")).toBe("300");
    expect(first.headers.get("X-Rate-Limit-Remaining")).toBe("299");
    expect(second.headers.get("X-Rate-Limit-Remaining")).toBe("298");
    const reset = Number(first.headers.get("X-Rate-Limit-Reset"));
    expect(reset).toBeGreaterThan(Date.now() / 1000);
    expect(reset).toBeLessThanOrEqual(Math.ceil(Date.now() / 1000) + 61);
  });

  it("errors after authentication carry them too", async () => {
    const t = await makeTenant({ scopes: ["listings:read"] });
    const denied = await call("/api/v1/users", { key: t.key });
    expectError(denied, 403, "auth.scope_denied");
    expect(denied.headers.get("X-Rate-Limit-Limit")).toBe("300");
    const t2 = await makeTenant();
    const missing = await call("/api/v1/users/usr_nope", { key: t2.key });
    expectError(missing, 404, "user_not_found");
    expect(missing.headers.get("X-Rate-Limit-Remaining")).toBe("599");
  });

  it("are not sent before authentication", async () => {
    const r = await call("/api/v1/users");
    expect(r.headers.get("X-Rate-Limit-Limit")).toBeNull();
  });
});

describe("budgets", () => {
  it("N + k simultaneous calls against a budget of N let exactly N through", async () => {
    const t = await makeTenant();
    await setOverrides(t, { read_users_list: 5 });
    const results = await Promise.all(Array.from({ length: 8 }, () => call("/api/v1/users", { key: t.key })));
    const ok = results.filter((r) => r.status === 200);
    const limited = results.filter((r) => r.status === 429);
    expect(ok).toHaveLength(5);
    expect(limited).toHaveLength(3);
    for (const r of limited) {
      expectError(r, 429, "rate_limit_exceeded");
      expect(Number(r.headers.get("Retry-After"))).toBeGreaterThanOrEqual(1);
      expect(Number(r.headers.get("Retry-After"))).toBeLessThanOrEqual(60);
      expect(r.headers.get("X-Rate-Limit-Remaining")).toBe("0");
      expect(r.json.error.details).toMatchObject({ endpoint: "read_users_list", limit: 5 });
    }
    expect(new Set(ok.map((r) => r.headers.get("X-Rate-Limit-Remaining")))).toEqual(new Set(["0", "1", "2", "3", "4"]));
  });

  it("budgets are independent per endpoint and per key", async () => {
    const t = await makeTenant();
    await setOverrides(t, { read_users_list: 1 });
    expect((await call("/api/v1/users", { key: t.key })).status).toBe(200);
    expectError(await call("/api/v1/users", { key: t.key }), 429, "rate_limit_exceeded");
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    const other = await makeTenant();
    expect((await call("/api/v1/users", { key: other.key })).status).toBe(200);
  });

  it("the window slides: requests older than 60 s stop counting", async () => {
    const t = await makeTenant();
    const gate = keyGate(env, t.keyId);
    await setOverrides(t, { read_users_list: 2 });
    const secretHash = await sha256Hex(t.key);
    const start = Date.now();
    const a = await gate.admit(t.keyId, secretHash, "test", "read_users_list", start);
    const b = await gate.admit(t.keyId, secretHash, "test", "read_users_list", start + 30_000);
    const c = await gate.admit(t.keyId, secretHash, "test", "read_users_list", start + 59_000);
    expect(a.ok && a.rate?.remaining).toBe(1);
    expect(b.ok && b.rate?.remaining).toBe(0);
    expect(c.ok && c.rate).toMatchObject({ remaining: 0, retryAfter: 1 });
    const d = await gate.admit(t.keyId, secretHash, "test", "read_users_list", start + 60_001);
    expect(d.ok && d.rate).toMatchObject({ remaining: 0 });
    expect(d.ok && d.rate?.retryAfter).toBeUndefined();
    const e = await gate.admit(t.keyId, secretHash, "test", "read_users_list", start + 60_002);
    // The request at +30 s is the oldest still counted: it leaves the window at +90 s.
    expect(e.ok && e.rate?.retryAfter).toBe(30);
  });
});

describe("the admin rate-limits route", () => {
  it("sets, answers effective budgets, and clears a single override", async () => {
    const t = await makeTenant();
    const set = await setOverrides(t, { read_users_list: 7, create_listing: 500 });
    expect(set.json).toMatchObject({ key_id: t.keyId, overrides: { read_users_list: 7, create_listing: 500 } });
    expect(set.json.effective_budgets).toMatchObject({ read_users_list: 7, create_listing: 500, upload_media: 20 });
    expect((await call("/api/v1/users", { key: t.key })).headers.get("X-Rate-Limit-Limit")).toBe("7");
    const cleared = await setOverrides(t, { read_users_list: null });
    expect(cleared.json.overrides).toEqual({ create_listing: 500 });
    expect((await call("/api/v1/users", { key: t.key })).headers.get("X-Rate-Limit-Limit")).toBe("300");
  });

  it("the internal surface sets and clears overrides too", async () => {
    const t = await makeTenant();
    const set = await internal(`/internal/v1/api-keys/${t.keyId}`, {
      method: "PATCH",
      body: { rate_limit_overrides: { read_users_list: 9 } },
    });
    expect(set.json.rate_limit_overrides, set.text).toEqual({ read_users_list: 9 });
    expect((await call("/api/v1/users", { key: t.key })).headers.get("X-Rate-Limit-Limit")).toBe("9");
    await internal(`/internal/v1/api-keys/${t.keyId}`, {
      method: "PATCH",
      body: { rate_limit_overrides: { read_users_list: null } },
    });
    expect((await call("/api/v1/users", { key: t.key })).headers.get("X-Rate-Limit-Limit")).toBe("300");
  });

  it("concurrent overrides of different endpoints all land", async () => {
    const t = await makeTenant();
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    const path = `/api/v1/admin/api-keys/${t.keyId}/rate-limits`;
    const budgets = { read_users_list: 11, create_listing: 12, upload_media: 13, read_tours_list: 14 };
    const answers = await Promise.all(
      Object.entries(budgets).map(([name, budget]) =>
        call(path, { method: "PATCH", key: admin.key, body: { overrides: { [name]: budget } } }),
      ),
    );
    for (const r of answers) expect(r.status, r.text).toBe(200);
    const internalSet = internal(`/internal/v1/api-keys/${t.keyId}`, {
      method: "PATCH",
      body: { rate_limit_overrides: { read_user_single: 15 } },
    });
    const publicSet = call(path, { method: "PATCH", key: admin.key, body: { overrides: { delete_tour: 16 } } });
    await Promise.all([internalSet, publicSet]);
    const key = await db().select().from(apiKeys).where(eq(apiKeys.id, t.keyId)).get();
    expect(key?.rateLimitOverrides).toEqual({ ...budgets, read_user_single: 15, delete_tour: 16 });
  });

  it("validates endpoint names and bounds", async () => {
    const t = await makeTenant();
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    const path = `/api/v1/admin/api-keys/${t.keyId}/rate-limits`;
    const unknown = await call(path, { method: "PATCH", key: admin.key, body: { overrides: { read_everything: 5 } } });
    expect(unknown.status, unknown.text).toBe(422);
    expect(JSON.stringify(unknown.json.error.details)).toContain("read_everything");
    const zero = await call(path, { method: "PATCH", key: admin.key, body: { overrides: { read_users_list: 0 } } });
    expectError(zero, 422, "validation_nested_error");
    expect(zero.json.error.details.errors[0].children[0]).toMatchObject({
      code: "validation_out_of_range",
      ctx: { minimum: 1 },
    });
    expectError(
      await call(`/api/v1/admin/api-keys/key_missing/rate-limits`, {
        method: "PATCH",
        key: admin.key,
        body: { overrides: {} },
      }),
      404,
      "api_key_not_found",
    );
  });

  it("is held to the calling key's agency: another agency's key is the same 404 as an unknown one", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    const patch = (keyId: string) =>
      call(`/api/v1/admin/api-keys/${keyId}/rate-limits`, {
        method: "PATCH",
        key: admin.key,
        body: { overrides: { read_users_list: 3 } },
      });
    const foreign = await patch(other.keyId);
    const unknown = await patch("key_0000000000000000000000");
    expectError(foreign, 404, "api_key_not_found");
    expectError(unknown, 404, "api_key_not_found");
    const shape = (r: typeof foreign) => ({ ...r.json.error, request_id: undefined });
    expect(shape(foreign)).toEqual(shape(unknown));
    const row = await db().select().from(apiKeys).where(eq(apiKeys.id, other.keyId)).get();
    expect(row?.rateLimitOverrides ?? {}).toEqual({});
    expect((await call("/api/v1/users", { key: other.key })).headers.get("X-Rate-Limit-Limit")).toBe("300");
    expect((await patch(t.keyId)).json.overrides).toEqual({ read_users_list: 3 });
  });

  it("is refused without the admin scope, and to callers that are not platform admins", async () => {
    const t = await makeTenant();
    const path = `/api/v1/admin/api-keys/${t.keyId}/rate-limits`;
    expectError(await call(path, { method: "PATCH", key: t.key, body: { overrides: {} } }), 403, "auth.scope_denied");
    const platformWithoutAdmin = await makePlatformKey(t.agencyId);
    expectError(
      await call(path, { method: "PATCH", key: platformWithoutAdmin.key, body: { overrides: {} } }),
      403,
      "auth.scope_denied",
    );
    // A key holding the admin scope whose minting role is an agency role (stored before the rule existed).
    await db()
      .update(apiKeys)
      .set({ scopes: ["admin"] })
      .where(eq(apiKeys.id, t.keyId));
    await keyGate(env, t.keyId).reload();
    expectError(await call(path, { method: "PATCH", key: t.key, body: { overrides: {} } }), 403, "role_forbidden");
  });
});

describe("failing closed", () => {
  it("an unreachable gate is 503 rate_limit_unavailable", async () => {
    const t = await makeTenant();
    const down = { getByName: () => ({ admit: () => Promise.reject(new Error("Durable Object reset")) }) };
    const r = await direct(keyed("/api/v1/users", t.key), { KEY_GATE: down });
    expect(r.status, r.text).toBe(503);
    expect(r.json.error.code).toBe("rate_limit_unavailable");
    expect(r.headers.get("Retry-After")).toBe("5");
  });

  it("a gate answering nonsense is 503 rate_limit_unavailable", async () => {
    const t = await makeTenant();
    const confused = { getByName: () => ({ admit: () => Promise.resolve("yes") }) };
    const r = await direct(keyed("/api/v1/users", t.key), { KEY_GATE: confused });
    expect(r.json.error.code, r.text).toBe("rate_limit_unavailable");
  });

  it("a budget that cannot be resolved is 500 rate_limit_misconfigured", async () => {
    const t = await makeTenant();
    await db()
      .update(apiKeys)
      .set({ rateLimitOverrides: { read_users_list: "lots" } as unknown as Record<string, number> })
      .where(eq(apiKeys.id, t.keyId));
    await keyGate(env, t.keyId).reload();
    expectError(await call("/api/v1/users", { key: t.key }), 500, "rate_limit_misconfigured");
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
  });

  it("revocation takes effect on the very next request", async () => {
    const t = await makeTenant();
    expect((await call("/api/v1/users", { key: t.key })).status).toBe(200);
    await changeKey(env, t.keyId, { op: "revoke" });
    expectError(await call("/api/v1/users", { key: t.key }), 401, "api_key_revoked");
  });
});
