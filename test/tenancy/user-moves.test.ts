import { describe, expect, it } from "vitest";
import { call, expectError, internal, makeTenant, outbox } from "../support/harness";

describe("a user who moves to another agency", () => {
  it("is announced to the new agency without any of the old agency's ids, and to the old one not at all", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const moved = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    const changed = await outbox(b.agencyId, "user.hierarchy_changed");
    expect(changed.map((e) => e.data)).toEqual([
      { user_id: a.teamLead.id, managerId: b.owner.id, previous_manager_id: null, agency_changed: true },
    ]);
    const aIds = [a.agencyId, a.owner.id, a.viewer.id];
    for (const event of await outbox(b.agencyId)) {
      for (const id of aIds) expect(JSON.stringify(event.data), event.eventType).not.toContain(id);
    }
    expect(await outbox(a.agencyId, "user.hierarchy_changed")).toEqual([]);
    expect(await outbox(a.agencyId, "user.deactivated")).toEqual([]);
  });
});

describe("the sandbox user helpers tell the key gates, like the dashboard routes", () => {
  const H = "/api/v1/test_helpers/users";

  it("after the deactivate helper, a key the user minted is refused on the very next request", async () => {
    const t = await makeTenant();
    expect((await call("/api/v1/users", { key: t.key })).status).toBe(200);
    const r = await call(`${H}/${t.owner.id}/deactivate`, { key: t.key, body: {} });
    expect(r.status, r.text).toBe(200);
    const refused = await call("/api/v1/users", { key: t.key });
    expectError(refused, 401, "api_key_disabled");
    expect(refused.json.error.details).toEqual({ reason: "minting_user_inactive" });
  });
});
