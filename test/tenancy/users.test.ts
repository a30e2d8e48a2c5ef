import { describe, expect, it } from "vitest";
import { call, expectError, makeTenant } from "../support/harness";

describe("GET /api/v1/users", () => {
  it("lists only the caller's agency, paged by cursor", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const first = await call("/api/v1/users?limit=3", { key: a.key });
    expect(first.status, first.text).toBe(200);
    expect(first.json.data).toHaveLength(3);
    expect(first.json.next_cursor).not.toBe("");
    const second = await call(`/api/v1/users?limit=3&cursor=${encodeURIComponent(first.json.next_cursor)}`, {
      key: a.key,
    });
    expect(second.status, second.text).toBe(200);
    const ids = [...first.json.data, ...second.json.data].map((u: { id: string }) => u.id);
    expect(new Set(ids)).toEqual(new Set([a.owner.id, a.teamLead.id, a.agent.id, a.viewer.id]));
    expect(second.json.next_cursor).toBe("");
    expect(ids).not.toContain(b.owner.id);
  });

  it("answers one user, and 404 user_not_found for another agency's user", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const own = await call(`/api/v1/users/${a.agent.id}`, { key: a.key });
    expect(own.status, own.text).toBe(200);
    expect(own.json).toMatchObject({ id: a.agent.id, role: "agent", managerId: a.teamLead.id, is_active: true });
    expectError(await call(`/api/v1/users/${b.agent.id}`, { key: a.key }), 404, "user_not_found");
    expectError(await call(`/api/v1/users/usr_nope`, { key: a.key }), 404, "user_not_found");
  });
});
