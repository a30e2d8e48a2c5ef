import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { events, idempotencyMarks, listings, users } from "../src/db/schema";
import { EVENT_TYPES } from "../src/domain/events";
import { createUser } from "../src/domain/hierarchy";
import { createListing } from "../src/domain/listings";
import { db, makeTenant, outbox, unique } from "./harness";

describe("the transactional outbox", () => {
  it("a change and its event commit together", async () => {
    const t = await makeTenant();
    const listing = await createListing(db(), t.agencyId, "https://site.test", {
      address: "1 Atomic Way",
      ownerUserId: t.owner.id,
      agentOneId: t.agent.id,
    });
    const [event] = await outbox(t.agencyId, "listing.created");
    expect(event).toMatchObject({
      eventType: "listing.created",
      apiVersion: EVENT_TYPES["listing.created"].apiVersion,
      data: {
        listing_number: listing.listingNumber,
        public_url: `https://site.test/property/${listing.listingNumber}`,
      },
    });
    expect(event!.timestamp).toBeGreaterThan(Date.now() / 1000 - 60);
  });

  it("a failure in the middle of the batch leaves neither the change nor its event", async () => {
    const t = await makeTenant();
    const d = db();
    // A statement after the change and the event that fails: a duplicate primary key.
    const duplicateMark = () => {
      const row = {
        agencyId: t.agencyId,
        idemKey: "dup",
        requestHash: "h",
        status: 201,
        expiresAt: new Date(Date.now() + 60_000).toISOString(),
      };
      return [d.insert(idempotencyMarks).values(row), d.insert(idempotencyMarks).values(row)];
    };
    await expect(
      createListing(
        d,
        t.agencyId,
        "https://site.test",
        { address: "2 Rollback Road", ownerUserId: t.owner.id, agentOneId: t.agent.id },
        duplicateMark,
      ),
    ).rejects.toThrow(/UNIQUE/);
    expect(await d.select().from(listings).where(eq(listings.agencyId, t.agencyId)).all()).toEqual([]);
    expect(new Set((await outbox(t.agencyId)).map((e) => e.eventType))).toEqual(new Set(["user.signed_up"]));
    expect(await d.select().from(idempotencyMarks).where(eq(idempotencyMarks.agencyId, t.agencyId)).all()).toEqual([]);
  });

  it("an event whose data breaks its schema is refused before anything is written", async () => {
    const t = await makeTenant();
    const email = `${unique("bad")}@example.test`;
    await expect(
      createUser(db(), { managerId: t.owner.id, role: "agent", name: "Bad", email, source: "telepathy" as never }),
    ).rejects.toThrow();
    expect(await db().select().from(users).where(eq(users.email, email)).all()).toEqual([]);
  });

  it("every event row carries the envelope's fields", async () => {
    const t = await makeTenant();
    const rows = await db().select().from(events).where(eq(events.agencyId, t.agencyId)).all();
    expect(rows.length).toBeGreaterThan(0);
    for (const row of rows) {
      expect(row.id).toMatch(/^evt_[a-z0-9]+$/);
      expect(Object.keys(EVENT_TYPES)).toContain(row.eventType);
      expect(row.apiVersion).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(Number.isInteger(row.timestamp)).toBe(true);
      expect(EVENT_TYPES[row.eventType as keyof typeof EVENT_TYPES].data.safeParse(row.data).success).toBe(true);
    }
  });
});
