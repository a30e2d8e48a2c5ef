import { and, eq, gt, lte } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { sessions } from "../../src/db/schema";
import { purgeSessions } from "../../src/domain/people/sessions";
import { call, db, expectError, internal, makeTenant } from "../support/harness";

const UPLOAD = "/api/v1/media/upload";
const cookie = (token: string) => ({ Cookie: `alms_session=${token}` });

describe("dashboard sessions", () => {
  it("a revoked session's cookie is refused with auth_required from the next request", async () => {
    const t = await makeTenant();
    const s = await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.agent.id } });
    expect(s.status, s.text).toBe(201);
    expect(s.json.session_id).toMatch(/^[0-9a-f]{64}$/);
    const before = await call(UPLOAD, { body: {}, headers: cookie(s.json.token) });
    expect(before.status, before.text).not.toBe(401);
    const revoked = await internal(`/internal/v1/sessions/${s.json.session_id}`, { method: "DELETE" });
    expect(revoked.status, revoked.text).toBe(204);
    expectError(await call(UPLOAD, { body: {}, headers: cookie(s.json.token) }), 401, "auth_required");
    // Again, or for an unknown session: nothing changes, the same answer.
    expect((await internal(`/internal/v1/sessions/${s.json.session_id}`, { method: "DELETE" })).status).toBe(204);
    expect((await internal(`/internal/v1/sessions/${"0".repeat(64)}`, { method: "DELETE" })).status).toBe(204);
    // Only the operator revokes.
    const anonymous = await call(`/internal/v1/sessions/${s.json.session_id}`, {
      method: "DELETE",
      idempotencyKey: null,
    });
    expect(anonymous.status, anonymous.text).toBe(401);
  });

  it("lists a user's live sessions, signs the user out everywhere, and lives at most a day", async () => {
    const t = await makeTenant();
    const other = await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.owner.id } });
    const made = [];
    for (let i = 0; i < 3; i++) {
      const s = await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.agent.id } });
      expect(s.status, s.text).toBe(201);
      made.push(s.json);
    }
    await internal(`/internal/v1/sessions/${made[0]!.session_id}`, { method: "DELETE" });
    const listed = await internal(`/internal/v1/users/${t.agent.id}/sessions`);
    expect(listed.status, listed.text).toBe(200);
    expect(listed.json.has_more).toBe(false);
    expect(listed.json.data.map((s: { session_id: string }) => s.session_id).sort()).toEqual(
      [made[1]!.session_id, made[2]!.session_id].sort(),
    );
    expect(JSON.stringify(listed.json)).not.toContain(made[1]!.token);

    const out = await internal(`/internal/v1/users/${t.agent.id}/sessions/revoke`, { method: "POST" });
    expect(out.status, out.text).toBe(200);
    expect(out.json).toEqual({ revoked: 2 });
    for (const s of made) expectError(await call(UPLOAD, { body: {}, headers: cookie(s.token) }), 401, "auth_required");
    expect((await internal(`/internal/v1/users/${t.agent.id}/sessions`)).json.data).toEqual([]);
    expect((await internal(`/internal/v1/users/${t.agent.id}/sessions/revoke`, { method: "POST" })).json).toEqual({
      revoked: 0,
    });
    // Another user's session lives on.
    expect((await call(UPLOAD, { body: {}, headers: cookie(other.json.token) })).status).not.toBe(401);
    expectError(await internal("/internal/v1/users/usr_nobody/sessions"), 404, "user_not_found");
    expectError(
      await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.agent.id, ttl_minutes: 1441 } }),
      422,
      "validation_out_of_range",
    );
    const day = await internal("/internal/v1/sessions", {
      method: "POST",
      body: { user_id: t.agent.id, ttl_minutes: 1440 },
    });
    expect(day.status, day.text).toBe(201);
  });

  it("the purge deletes expired and revoked sessions in bounded pages, and never a live one", async () => {
    const t = await makeTenant();
    const past = new Date(Date.now() - 3600_000).toISOString();
    const rows = Array.from({ length: 1_200 }, (_, i) => ({
      tokenHash: `expired-${t.agent.id}-${i}`,
      userId: t.agent.id,
      expiresAt: past,
    }));
    for (let i = 0; i < rows.length; i += 20)
      await db()
        .insert(sessions)
        .values(rows.slice(i, i + 20));
    const live = await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.agent.id } });
    const revoked = await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.agent.id } });
    await internal(`/internal/v1/sessions/${revoked.json.session_id}`, { method: "DELETE" });
    const now = Date.now() + 1;
    const expiredLeft = async () =>
      (
        await db()
          .select({ id: sessions.tokenHash })
          .from(sessions)
          .where(and(eq(sessions.userId, t.agent.id), lte(sessions.expiresAt, new Date(now).toISOString())))
      ).length;

    expect(await purgeSessions(db(), now, 2)).toEqual({ deleted: 1_000, statements: 2 });
    expect(await expiredLeft()).toBe(201);
    const rest = await purgeSessions(db(), now);
    expect(rest.deleted).toBeGreaterThanOrEqual(201);
    expect(await expiredLeft()).toBe(0);
    const remaining = await db()
      .select({ id: sessions.tokenHash })
      .from(sessions)
      .where(and(eq(sessions.userId, t.agent.id), gt(sessions.expiresAt, new Date(now).toISOString())));
    expect(remaining.map((r) => r.id)).toEqual([live.json.session_id]);
  });
});
