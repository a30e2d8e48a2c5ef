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
