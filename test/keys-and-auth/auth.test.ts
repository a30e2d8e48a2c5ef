import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { apiKeySecrets } from "../../src/db/schema";
import { mintKey } from "../../src/domain/api-keys";
import type { Caller, Scope } from "../../src/domain/roles";
import { authorize } from "../../src/http/admission/authorize";
import type { AppEnv } from "../../src/http/env";
import { errorResponse, handleError } from "../../src/http/errors";
import { requestId } from "../../src/http/request-id";
import worker from "../../src/index";
import { DomainError } from "../../src/lib/errors";
import { call, db, direct, expectError, internal, keyed, makePlatformKey, makeTenant } from "../support/harness";

const TOKEN = "A".repeat(43);
const users = (key?: string, headers: Record<string, string> = {}) => call("/api/v1/users", { key, headers });

describe("the key header", () => {
  it("api_key_missing without X-API-Key", async () => {
    expectError(await users(), 401, "api_key_missing");
  });

  it("api_key_header_mismatch for Authorization: Bearer, even with a valid key", async () => {
    const t = await makeTenant();
    expectError(await users(undefined, { Authorization: `Bearer ${t.key}` }), 401, "api_key_header_mismatch");
  });

  it("api_key_malformed_prefix names the detected prefix", async () => {
    const r = await users(`pk_live_${TOKEN}`);
    expectError(r, 401, "api_key_malformed_prefix");
    expect(r.json.error.details.detected_prefix).toBe("pk_live_");
    expect(r.text).not.toContain(TOKEN);
  });

  it("api_key_malformed_length when the prefix is right but the length is not", async () => {
    expectError(await users(`sk_test_${TOKEN}x`), 401, "api_key_malformed_length");
    expectError(await users("sk_test_short"), 401, "api_key_malformed_length");
  });

  it("api_key_invalid for a well-formed unknown key", async () => {
    expectError(await users(`sk_test_${TOKEN}`), 401, "api_key_invalid");
  });
});

describe("modes", () => {
  it("a live key on the sandbox is api_key_wrong_mode", async () => {
    expectError(await users(`sk_live_${TOKEN}`), 401, "api_key_wrong_mode");
    expectError(await users(`ma_live_${TOKEN}`), 401, "api_key_wrong_mode");
  });

  it("a sandbox key on live is api_key_wrong_mode", async () => {
    const t = await makeTenant();
    const r = await direct(keyed("/api/v1/users", t.key), { API_MODE: "live" });
    expect(r.status, r.text).toBe(401);
    expect(r.json.error.code).toBe("api_key_wrong_mode");
  });

  it("live accepts sk_live_ and the legacy ma_live_ prefix", async () => {
    const t = await makeTenant();
    for (const prefix of ["sk_live_", "ma_live_"] as const) {
      const { secret } = await mintKey(db(), {
        agencyId: t.agencyId,
        mintedByUserId: t.owner.id,
        mode: "live",
        prefix,
      });
      expect(secret.startsWith(prefix)).toBe(true);
      const r = await direct(keyed("/api/v1/users", secret), { API_MODE: "live" });
      expect(r.status, r.text).toBe(200);
    }
  });
});

describe("key states", () => {
  it("revoked keys are refused immediately, for good", async () => {
    const t = await makeTenant();
    expect((await users(t.key)).status).toBe(200);
    const revoked = await internal(`/internal/v1/api-keys/${t.keyId}/revoke`, { method: "POST" });
    expect(revoked.json.state, revoked.text).toBe("revoked");
    expectError(await users(t.key), 401, "api_key_revoked");
    expectError(
      await internal(`/internal/v1/api-keys/${t.keyId}/revoke`, { method: "POST" }),
      409,
      "api_key_already_revoked",
    );
    expectError(
      await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" }),
      409,
      "api_key_not_rotatable",
    );
  });

  it("disabled keys are refused until re-enabled", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/api-keys/${t.keyId}`, { method: "PATCH", body: { is_active: false } });
    expectError(await users(t.key), 401, "api_key_disabled");
    const enabled = await internal(`/internal/v1/api-keys/${t.keyId}`, { method: "PATCH", body: { is_active: true } });
    expect(enabled.json.state, enabled.text).toBe("active");
    expect((await users(t.key)).status).toBe(200);
  });

  it("expired keys answer api_key_expired with details.expired_at", async () => {
    const t = await makeTenant();
    const expiresAt = new Date(Date.now() - 1000).toISOString();
    await internal(`/internal/v1/api-keys/${t.keyId}`, { method: "PATCH", body: { expires_at: expiresAt } });
    const r = await users(t.key);
    expectError(r, 401, "api_key_expired");
    expect(r.json.error.details.expired_at).toBe(expiresAt);
    await internal(`/internal/v1/api-keys/${t.keyId}`, {
      method: "PATCH",
      body: { expires_at: new Date(Date.now() + 3600_000).toISOString() },
    });
    expect((await users(t.key)).status).toBe(200);
  });

  it("rotation: old and new secrets both work within the grace window", async () => {
    const t = await makeTenant();
    const rotated = await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" });
    expect(rotated.status, rotated.text).toBe(200);
    const fresh: string = rotated.json.secret;
    expect(fresh).toMatch(/^sk_test_[A-Za-z0-9_-]{43}$/);
    expect(fresh).not.toBe(t.key);
    expect(rotated.json.key).toMatchObject({
      state: "rotating",
      rotation_started_at: expect.any(String),
      rotation_grace_ends_at: expect.any(String),
    });
    expect((await users(t.key)).status).toBe(200);
    expect((await users(fresh)).status).toBe(200);
  });

  it("rotation: the old secret is refused past 30 days, and the nightly sweep deactivates it", async () => {
    const t = await makeTenant();
    const { json } = await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" });
    const longAgo = new Date(Date.now() - 31 * 24 * 3600_000).toISOString();
    await db().update(apiKeySecrets).set({ supersededAt: longAgo }).where(eq(apiKeySecrets.keyId, t.keyId));
    await db()
      .update(apiKeySecrets)
      .set({ supersededAt: null })
      .where(eq(apiKeySecrets.last4, json.secret.slice(-4)));
    expectError(await users(t.key), 401, "api_key_invalid");
    expect((await users(json.secret)).status).toBe(200);

    const ctx = createExecutionContext();
    await worker.scheduled(createScheduledController({ cron: "0 3 * * *", scheduledTime: Date.now() }), env, ctx);
    await waitOnExecutionContext(ctx);
    const secrets = await db().select().from(apiKeySecrets).where(eq(apiKeySecrets.keyId, t.keyId));
    expect(secrets.find((s) => s.supersededAt)?.deactivatedAt).toBeTypeOf("string");
    expect(secrets.find((s) => !s.supersededAt)?.deactivatedAt).toBeNull();
    expectError(await users(t.key), 401, "api_key_invalid");
    expect((await users(json.secret)).status).toBe(200);
  });

  it("a second rotation ends the first one's grace at once: at most two secrets are valid", async () => {
    const t = await makeTenant();
    const first = await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" });
    const second = await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" });
    expectError(await users(t.key), 401, "api_key_invalid");
    expect((await users(first.json.secret)).status).toBe(200);
    expect((await users(second.json.secret)).status).toBe(200);
    expect(second.json.key.secrets).toHaveLength(2);
  });
});

describe("scopes and roles", () => {
  it("a key without the route's scope gets auth.scope_denied", async () => {
    const t = await makeTenant({ scopes: ["listings:read"] });
    const r = await users(t.key);
    expectError(r, 403, "auth.scope_denied");
    expect(r.json.error.details.required_scope).toBe("users:read");
    expectError(await call(`/api/v1/users/${t.owner.id}`, { key: t.key }), 403, "auth.scope_denied");
  });

  it("the admin scope can be granted only on keys minted by platform admins", async () => {
    const t = await makeTenant();
    const r = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: t.owner.id, scopes: ["admin"] },
    });
    expectError(r, 422, "scope_not_grantable");
    const platform = await makePlatformKey(t.agencyId, { scopes: ["users:read", "admin"] });
    const list = await users(platform.key);
    expect(list.status, list.text).toBe(200);
    expect(list.json.data.map((u: { id: string }) => u.id)).toContain(t.owner.id);
  });

  it("role_forbidden for a caller role outside the route's roles", async () => {
    const app = new Hono<AppEnv>()
      .use(requestId())
      .get("/admin", (c) => {
        const scopes = new Set<Scope>(["admin"]);
        const caller: Caller = { via: "api_key", agencyId: "agy_x", role: "media_agency", scopes, userId: "usr_x" };
        authorize(caller, { scope: "admin", roles: ["super_admin", "admin"] });
        return c.text("ok");
      })
      .onError(handleError)
      .notFound((c) => errorResponse(c, new DomainError("request_path_not_found")));
    const res = await app.request("/admin");
    const json = (await res.json()) as any;
    expect(res.status).toBe(403);
    expect(json.error).toMatchObject({
      code: "role_forbidden",
      details: { role: "media_agency", allowed_roles: ["super_admin", "admin"] },
    });
  });
});
