import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { createSession } from "../../src/domain/people/sessions";
import { call, expectError, internal, makeListing, makeTenant } from "../support/harness";

const users = (key: string) => call("/api/v1/users?limit=100", { key });
const rowOf = (d1: D1Database, userId: string) =>
  d1.prepare("SELECT agency_id AS agencyId, manager_id AS managerId FROM users WHERE id = ?1").bind(userId).first();

describe("a user moved to an agency on another shard", () => {
  it("arrives with their subtree and sessions, leaves the old agency as a move inside one shard does, and can come back", async () => {
    const a = await makeTenant();
    const b = await makeTenant({ shard: "shard-2" });
    const listing = await makeListing(a);
    const session = (await createSession(database(env.DB), a.teamLead.id)).token;

    const moved = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json).toMatchObject({ id: a.teamLead.id, agency_id: b.agencyId, managerId: b.owner.id });

    // The new agency sees them (the team lead and the agent under them); the old one no longer does.
    const bUsers = (await users(b.key)).json.data.map((u: { id: string }) => u.id);
    expect(bUsers).toEqual(expect.arrayContaining([a.teamLead.id, a.agent.id]));
    const aUsers = (await users(a.key)).json.data.map((u: { id: string }) => u.id);
    expect(aUsers).not.toContain(a.teamLead.id);
    expect(aUsers).not.toContain(a.agent.id);
    const read = await internal(`/internal/v1/users/${a.agent.id}`);
    expect(read.json.agency_id, read.text).toBe(b.agencyId);
    // Their rows and their session are on the new agency's shard; the old shard keeps rows naming the new agency.
    expect(await rowOf(env.SHARD_2, a.teamLead.id)).toEqual({ agencyId: b.agencyId, managerId: b.owner.id });
    expect(await rowOf(env.DB, a.agent.id)).toMatchObject({ agencyId: b.agencyId });
    const sessionsOn = async (d1: D1Database) =>
      (
        await d1
          .prepare("SELECT count(*) AS n FROM sessions WHERE user_id = ?1")
          .bind(a.teamLead.id)
          .first<{ n: number }>()
      )?.n;
    expect(await sessionsOn(env.SHARD_2)).toBe(1);
    expect(await sessionsOn(env.DB)).toBe(0);
    expect(session).toBeTypeOf("string");
    // The new agency hears of the move; the old one's listing that named the agent is handed over.
    const feed = await call("/api/v1/events?after_sequence=0&limit=100", { key: b.key });
    const changed = feed.json.data.filter((e: { event_type: string }) => e.event_type === "user.hierarchy_changed");
    expect(changed.map((e: { data: unknown }) => e.data)).toContainEqual(
      expect.objectContaining({ user_id: a.teamLead.id, previous_manager_id: null, agency_changed: true }),
    );
    const handed = await call(`/api/v1/listings/${listing.listing_number}`, { key: a.key });
    expect(handed.json.agent_one_id).toBe(a.owner.id);
    // Users are counted where their agency lives.
    const limits = async (key: string) => (await call("/api/v1/limits", { key })).json.quotas.users;
    expect((await limits(b.key)).used).toBe(4 + 2);
    expect((await limits(a.key)).used).toBe(4 - 2);

    // And back: the old agency's shard takes them again.
    const back = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: a.owner.id },
    });
    expect(back.status, back.text).toBe(200);
    expect(back.json.agency_id).toBe(a.agencyId);
    expect((await users(a.key)).json.data.map((u: { id: string }) => u.id)).toContain(a.agent.id);
    expect((await users(b.key)).json.data.map((u: { id: string }) => u.id)).not.toContain(a.agent.id);
    expect((await limits(a.key)).used).toBe(4);
  });

  it("refuses the old agency's keys its movers minted, from the very next request", async () => {
    const a = await makeTenant();
    const b = await makeTenant({ shard: "shard-2" });
    expect((await users(a.key)).status).toBe(200);
    const moved = await internal(`/internal/v1/users/${a.owner.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    const refused = await users(a.key);
    expectError(refused, 401, "api_key_disabled");
    expect(refused.json.error.details).toEqual({ reason: "minting_user_moved" });
    expect((await users(b.key)).status).toBe(200);
  });

  it("refuses the move whole when an email of the subtree is taken in the new agency", async () => {
    const a = await makeTenant();
    const b = await makeTenant({ shard: "shard-2" });
    const email = ((await internal(`/internal/v1/users/${a.agent.id}`)).json as { email: string }).email;
    const twin = await internal("/internal/v1/users", {
      method: "POST",
      body: { manager_id: b.owner.id, role: "agent", name: "Twin", email },
    });
    expect(twin.status, twin.text).toBe(201);
    const moved = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expectError(moved, 409, "user_email_taken");
    expect(await rowOf(env.DB, a.teamLead.id)).toMatchObject({ agencyId: a.agencyId });
    expect(await rowOf(env.SHARD_2, a.teamLead.id)).toBeNull();
  });
});
