import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { connectCalendar, resolveConnection } from "../../src/calendar/connections";
import { calendarConnections, deliveryDestinations } from "../../src/db/schema";
import { getUserById } from "../../src/domain/people/hierarchy";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { saveDestination } from "../../src/media/delivery/destinations";
import { destinationFor } from "../../src/media/delivery/records";
import { db, internal, makeTenant } from "../support/harness";

describe("a listing's delivery destination", () => {
  it("is its agent's only while the agent is a user of the listing's agency", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const d = db();
    const agent = await getUserById(d, a.agent.id);
    await saveDestination(d, keyringOf(env), agent, {
      endpointUrl: "https://s3.example.com",
      bucket: "media",
      region: "auto",
      addressingStyle: "path",
      accessKeyId: "AKIA",
      secretAccessKey: "agent-secret",
      pathPrefix: "",
    });
    const listing = { agencyId: a.agencyId, agentOneId: a.agent.id, agentTwoId: null };
    expect((await destinationFor(d, listing))?.userId).toBe(a.agent.id);

    // The agent moves to agency B; a save that raced the move left the destination bound to A.
    const moved = await internal(`/internal/v1/users/${a.agent.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    await d
      .update(deliveryDestinations)
      .set({ agencyId: a.agencyId })
      .where(eq(deliveryDestinations.userId, a.agent.id));
    // A's listings, still naming the agent, are never delivered to the storage of someone now in B.
    expect(await destinationFor(d, listing)).toBeUndefined();
  });

  it("and a calendar saved while its user moved is never read for the new agency", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const d = db();
    await connectCalendar(
      d,
      keyringOf(env),
      { id: a.agent.id, agencyId: a.agencyId },
      { provider: "ics", feedUrl: "https://calendar.example.com/agent.ics" },
      { allowLocalHttp: false },
    );
    expect((await resolveConnection(d, a.agencyId, a.agent.id)).userId).toBe(a.agent.id);
    const moved = await internal(`/internal/v1/users/${a.agent.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    // A connect that raced the move (it read the user in A) leaves a connection bound to A.
    await connectCalendar(
      d,
      keyringOf(env),
      { id: a.agent.id, agencyId: a.agencyId },
      { provider: "ics", feedUrl: "https://calendar.example.com/agent-late.ics" },
      { allowLocalHttp: false },
    );
    const [row] = await d.select().from(calendarConnections).where(eq(calendarConnections.userId, a.agent.id));
    expect(row?.agencyId).toBe(a.agencyId);
    const refused = await resolveConnection(d, b.agencyId, a.agent.id).then(
      (c) => c,
      (err: unknown) => err,
    );
    expect(refused).toMatchObject({ code: "calendar_not_connected" });
  });
});
