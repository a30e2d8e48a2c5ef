import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { apiKeySecrets, events } from "../../src/db/schema";
import worker from "../../src/index";
import { BASE, call, db, expectError, internal, makeTenant, unique } from "../support/harness";

const eventsOf = (agencyId: string, type: string) =>
  db()
    .select()
    .from(events)
    .where(and(eq(events.agencyId, agencyId), eq(events.eventType, type)))
    .all();

describe("operator authentication", () => {
  it("a missing or wrong operator token is operator_token_invalid", async () => {
    expectError(await call("/internal/v1/agencies"), 401, "operator_token_invalid");
    expectError(
      await call("/internal/v1/agencies", { headers: { Authorization: "Bearer nope" } }),
      401,
      "operator_token_invalid",
    );
  });

  it("the token is compared as SHA-256 digests in constant time, whatever the presented length", async () => {
    const digests = vi.spyOn(crypto.subtle, "digest");
    try {
      for (const presented of ["x", "test-operator-toke", "test-operator-tokenn", "t".repeat(500)]) {
        digests.mockClear();
        const r = await call("/internal/v1/agencies", { headers: { Authorization: `Bearer ${presented}` } });
        expectError(r, 401, "operator_token_invalid");
        const hashed = digests.mock.calls.map(([algorithm, data]) => [
          algorithm,
          new TextDecoder().decode(data as ArrayBuffer),
        ]);
        expect(hashed).toEqual(
          expect.arrayContaining([
            ["SHA-256", presented],
            ["SHA-256", "test-operator-token"],
          ]),
        );
      }
      const ok = await internal(`/internal/v1/users/${(await makeTenant()).owner.id}`);
      expect(ok.status, ok.text).toBe(200);
    } finally {
      digests.mockRestore();
    }
  });

  it("without a configured operator token, /internal/ does not exist", async () => {
    const { OPERATOR_TOKEN: _, ...withoutToken } = env as Env & { OPERATOR_TOKEN?: string };
    for (const [method, path] of [
      ["GET", "/internal/v1/agencies"],
      ["DELETE", "/internal/v1/agencies"],
      ["POST", "/internal/v1/users"],
      ["GET", "/internal/v1/openapi.json"],
      ["OPTIONS", "/internal/v1/users"],
    ]) {
      const ctx = createExecutionContext();
      const res = await worker.fetch(
        new Request(`${BASE}${path}`, { method, headers: { Authorization: "Bearer test-operator-token" } }),
        withoutToken as Env,
        ctx,
      );
      await waitOnExecutionContext(ctx);
      const body = (await res.json()) as any;
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(body.error.code).toBe("request_path_not_found");
      expect(res.headers.get("Allow")).toBeNull();
    }
  });

  it("serves its own OpenAPI document, apart from the public one", async () => {
    const r = await internal("/internal/v1/openapi.json");
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.json.paths)).toContain("/internal/v1/api-keys/{key_id}/rotate");
    const pub = await call("/api/v1/openapi.json");
    expect(pub.text).not.toContain("/internal/");
  });
});

describe("agencies and users", () => {
  it("creates an agency and users under a manager, emitting user.signed_up", async () => {
    const agency = await internal("/internal/v1/agencies", {
      method: "POST",
      body: { name: unique("Agency"), kind: "broker" },
    });
    expect(agency.status, agency.text).toBe(201);
    expect(agency.json).toMatchObject({ kind: "broker", cancellation_notice_hours: 24 });
    const owner = await internal("/internal/v1/users", {
      method: "POST",
      body: { agency_id: agency.json.id, role: "broker", name: "Owner", email: `${unique("o")}@example.test` },
    });
    expect(owner.status, owner.text).toBe(201);
    const agent = await internal("/internal/v1/users", {
      method: "POST",
      body: {
        manager_id: owner.json.id,
        role: "agent",
        name: "Agent",
        email: `${unique("a")}@example.test`,
        source: "invite",
      },
    });
    expect(agent.json).toMatchObject({
      agency_id: agency.json.id,
      managerId: owner.json.id,
      role: "agent",
      is_active: true,
    });
    const signedUp = await eventsOf(agency.json.id, "user.signed_up");
    expect(signedUp.map((e) => e.data)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ user_id: agent.json.id, source: "invite", managerId: owner.json.id, role: "agent" }),
      ]),
    );
    expect(signedUp[0]!.id).toMatch(/^evt_/);
    const listed = await internal(`/internal/v1/users?agency_id=${agency.json.id}`);
    expect(listed.json.data.map((u: { id: string }) => u.id)).toEqual([owner.json.id, agent.json.id]);
  });

  it("refuses what would break the hierarchy", async () => {
    const t = await makeTenant();
    expectError(
      await internal("/internal/v1/users", {
        method: "POST",
        body: { agency_id: t.agencyId, role: "agent", name: "No manager", email: `${unique("x")}@example.test` },
      }),
      422,
      "invalid_role",
    );
    expectError(
      await internal("/internal/v1/users", {
        method: "POST",
        body: { manager_id: "usr_missing", role: "agent", name: "X", email: `${unique("x")}@example.test` },
      }),
      422,
      "manager_not_found",
    );
    expectError(
      await internal("/internal/v1/users", {
        method: "POST",
        body: { agency_id: "agy_missing", role: "broker", name: "X", email: `${unique("x")}@example.test` },
      }),
      404,
      "agency_not_found",
    );
    expectError(
      await internal(`/internal/v1/users/${t.teamLead.id}/manager`, {
        method: "PATCH",
        body: { manager_id: t.agent.id },
      }),
      422,
      "hierarchy_cycle",
    );
    expectError(await internal("/internal/v1/users/usr_missing"), 404, "user_not_found");
    expectError(await internal("/internal/v1/agencies/agy_missing"), 404, "agency_not_found");
  });

  it("a duplicate email is user_email_taken and stores nothing", async () => {
    const t = await makeTenant();
    const email = `${unique("dup")}@example.test`;
    expect(
      (
        await internal("/internal/v1/users", {
          method: "POST",
          body: { manager_id: t.owner.id, role: "agent", name: "One", email },
        })
      ).status,
    ).toBe(201);
    expectError(
      await internal("/internal/v1/users", {
        method: "POST",
        body: { manager_id: t.owner.id, role: "agent", name: "Two", email: email.toUpperCase() },
      }),
      409,
      "user_email_taken",
    );
    const names = (await call("/api/v1/users?limit=200", { key: t.key })).json.data.map(
      (u: { name: string }) => u.name,
    );
    expect(names.filter((n: string) => n === "Two")).toEqual([]);
    const signedUp = await eventsOf(t.agencyId, "user.signed_up");
    expect(signedUp.filter((e) => (e.data as { role: string }).role === "agent")).toHaveLength(2);
  });

  it("emails are unique per agency: a move that would bring one twice into an agency moves no one", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const email = `${unique("shared")}@example.test`;
    const create = (managerId: string, name: string) =>
      internal("/internal/v1/users", { method: "POST", body: { manager_id: managerId, role: "agent", name, email } });
    const inA = await create(a.agent.id, "Below the agent");
    expect(inA.status, inA.text).toBe(201);
    const inB = await create(b.owner.id, "Same email elsewhere");
    expect(inB.status, inB.text).toBe(201);
    const moved = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expectError(moved, 409, "user_email_taken");
    expect((await call(`/api/v1/users/${inA.json.id}`, { key: a.key })).json.managerId).toBe(a.agent.id);
    expect((await call(`/api/v1/users/${a.teamLead.id}`, { key: a.key })).json.managerId).toBe(a.owner.id);
    expect(await eventsOf(b.agencyId, "user.hierarchy_changed")).toEqual([]);
  });

  it("moving a user across agencies takes its subtree along; the event goes to the new agency", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const moved = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json).toMatchObject({ agency_id: b.agencyId, managerId: b.owner.id });
    expect((await call(`/api/v1/users/${a.teamLead.id}`, { key: b.key })).status).toBe(200);
    expect((await call(`/api/v1/users/${a.agent.id}`, { key: b.key })).json.managerId).toBe(a.teamLead.id);
    expectError(await call(`/api/v1/users/${a.teamLead.id}`, { key: a.key }), 404, "user_not_found");
    expectError(await call(`/api/v1/users/${a.agent.id}`, { key: a.key }), 404, "user_not_found");
    expect((await eventsOf(b.agencyId, "user.hierarchy_changed")).map((e) => e.data)).toEqual([
      { user_id: a.teamLead.id, managerId: b.owner.id, previous_manager_id: null, agency_changed: true },
    ]);
    expect(await eventsOf(a.agencyId, "user.hierarchy_changed")).toEqual([]);
  });

  it("deactivation emits user.deactivated once", async () => {
    const t = await makeTenant();
    const first = await internal(`/internal/v1/users/${t.agent.id}/deactivate`, {
      method: "POST",
      body: { reason: "suspended" },
    });
    expect(first.json.is_active, first.text).toBe(false);
    const again = await internal(`/internal/v1/users/${t.agent.id}/deactivate`, { method: "POST", body: {} });
    expect(again.status, again.text).toBe(200);
    expect((await eventsOf(t.agencyId, "user.deactivated")).map((e) => e.data)).toEqual([
      { user_id: t.agent.id, reason: "suspended" },
    ]);
    expect((await call(`/api/v1/users/${t.agent.id}`, { key: t.key })).json.is_active).toBe(false);
    const inactive = await call("/api/v1/users?is_active=false", { key: t.key });
    expect(inactive.json.data.map((u: { id: string }) => u.id)).toEqual([t.agent.id]);
  });
});

describe("API keys", () => {
  it("mints a key whose secret is shown once and never listed; only its hash is stored", async () => {
    const t = await makeTenant();
    const minted = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: t.owner.id, name: "CI", scopes: ["users:read"] },
    });
    expect(minted.status, minted.text).toBe(201);
    const secret: string = minted.json.secret;
    expect(secret).toMatch(/^sk_test_[A-Za-z0-9_-]{43}$/);
    expect(minted.json.key).toMatchObject({
      mode: "test",
      role: "media_agency",
      scopes: ["users:read"],
      state: "active",
      secrets: [{ prefix: "sk_test_", last4: secret.slice(-4) }],
    });
    const list = await internal(`/internal/v1/api-keys?agency_id=${t.agencyId}`);
    expect(list.json.data.map((k: { id: string }) => k.id)).toContain(minted.json.key.id);
    expect(list.text).not.toContain(secret.slice(8));
    expect((await internal(`/internal/v1/api-keys/${minted.json.key.id}`)).text).not.toContain(secret.slice(8));
    const stored = await db().select().from(apiKeySecrets).where(eq(apiKeySecrets.keyId, minted.json.key.id)).all();
    expect(JSON.stringify(stored)).not.toContain(secret.slice(8));
    expect(stored[0]!.hash).toMatch(/^[0-9a-f]{64}$/);
    expect((await call("/api/v1/users", { key: secret })).status).toBe(200);
  });

  it("only agency owners (for their agency) and platform admins mint keys", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    expectError(
      await internal("/internal/v1/api-keys", {
        method: "POST",
        body: { agency_id: a.agencyId, minted_by_user_id: a.agent.id },
      }),
      422,
      "key_mint_forbidden",
    );
    expectError(
      await internal("/internal/v1/api-keys", {
        method: "POST",
        body: { agency_id: a.agencyId, minted_by_user_id: b.owner.id },
      }),
      422,
      "key_mint_forbidden",
    );
    expectError(
      await internal("/internal/v1/api-keys", {
        method: "POST",
        body: { agency_id: a.agencyId, minted_by_user_id: a.owner.id, prefix: "sk_live_" },
      }),
      422,
      "key_mint_forbidden",
    );
    expectError(await internal("/internal/v1/api-keys/key_missing"), 404, "api_key_not_found");
  });

  it("lists the agency's keys, oldest first, each with its own secrets, and no other agency's keys", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const second = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: t.owner.id, name: "second" },
    });
    expect(second.status, second.text).toBe(201);
    const rotated = await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" });
    expect(rotated.status, rotated.text).toBe(200);

    const list = await internal(`/internal/v1/api-keys?agency_id=${t.agencyId}`);
    expect(list.status, list.text).toBe(200);
    const keys = list.json.data as {
      id: string;
      state: string;
      secrets: { last4: string; superseded_at: unknown }[];
    }[];
    expect(keys.map((k) => k.id)).toEqual([t.keyId, second.json.key.id]);
    expect(keys.map((k) => k.id)).not.toContain(other.keyId);
    expect(keys[0], list.text).toMatchObject({ state: "rotating", secrets: rotated.json.key.secrets });
    expect(keys[0]!.secrets.map((s) => s.last4)).toEqual([t.key.slice(-4), rotated.json.secret.slice(-4)]);
    expect(keys[1], list.text).toMatchObject({ state: "active", secrets: second.json.key.secrets });
    expect(keys[1]!.secrets).toHaveLength(1);
  });

  it("narrows and widens scopes; the next request sees the change", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/api-keys/${t.keyId}`, { method: "PATCH", body: { scopes: ["listings:read"] } });
    expectError(await call("/api/v1/users", { key: t.key }), 403, "auth.scope_denied");
    const widened = await internal(`/internal/v1/api-keys/${t.keyId}`, {
      method: "PATCH",
      body: { scopes: ["users:read"], name: "reader" },
    });
    expect(widened.json).toMatchObject({ scopes: ["users:read"], name: "reader" });
    expect((await call("/api/v1/users", { key: t.key })).status).toBe(200);
    expectError(
      await internal(`/internal/v1/api-keys/${t.keyId}`, { method: "PATCH", body: { scopes: ["admin"] } }),
      422,
      "scope_not_grantable",
    );
  });
});

describe("sessions", () => {
  it("creates a dashboard session cookie for an active user, not for a deactivated one", async () => {
    const t = await makeTenant();
    const s = await internal("/internal/v1/sessions", {
      method: "POST",
      body: { user_id: t.agent.id, ttl_minutes: 30 },
    });
    expect(s.status, s.text).toBe(201);
    expect(s.json.set_cookie).toContain(`alms_session=${s.json.token}`);
    expect(s.json.set_cookie).toMatch(/HttpOnly; Secure; SameSite=Lax/);
    await internal(`/internal/v1/users/${t.viewer.id}/deactivate`, { method: "POST", body: {} });
    expectError(
      await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.viewer.id } }),
      404,
      "user_not_found",
    );
  });
});
