import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, idempotencyMarks, listings, users } from "../../src/db/schema";
import { EVENT_TYPES } from "../../src/domain/events/catalog";
import { outboxInsertIfChanged } from "../../src/domain/events/outbox";
import { createListing } from "../../src/domain/listings/create";
import { createUser } from "../../src/domain/people/hierarchy";
import { drainOutbox } from "../../src/webhooks/outbox/drain";
import { captureErrorLogs, db, makeTenant, outbox, type Tenant, unique } from "../support/harness";
import { captureQueue } from "../support/webhook-fixtures";

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

describe("an event nobody subscribes to", () => {
  // The endpoints below have no secret that opens: what the drains send stays here, not with the queue's consumer,
  // which hands a delivery over at once.
  beforeEach(() => {
    captureQueue();
  });
  afterEach(() => vi.restoreAllMocks());

  /** An endpoint of the tenant's agency, written straight to D1 as registration would leave it. */
  async function endpoint(agencyId: string, eventTypes: string | null, isActive = true) {
    const id = unique("whe");
    await env.DB.prepare(
      "INSERT INTO webhook_endpoints (id, agency_id, url, event_types, secret_sealed, is_active) VALUES (?, ?, ?, ?, ?, ?)",
    )
      .bind(id, agencyId, "https://receiver.test/hook", eventTypes, "sealed", isActive ? 1 : 0)
      .run();
    return id;
  }

  const create = (t: Tenant) =>
    createListing(db(), t.agencyId, "https://site.test", {
      address: "1 Quiet Lane",
      ownerUserId: t.owner.id,
      agentOneId: t.agent.id,
    });
  const created = async (t: Tenant) => (await outbox(t.agencyId, "listing.created"))[0]!;

  it("is written as already sent when no active endpoint of the agency takes its type", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    await endpoint(t.agencyId, JSON.stringify(["user.signed_up", "listing.status_changed"]));
    await endpoint(t.agencyId, null, false);
    await endpoint(other.agencyId, null);
    const before = Date.now();
    await create(t);
    const event = await created(t);
    expect(event.enqueuedAt).not.toBeNull();
    expect(Date.parse(event.enqueuedAt!)).toBeGreaterThanOrEqual(before - 1000);
    // The drain never claims it.
    await drainOutbox(env);
    expect(await created(t)).toMatchObject({ attempts: 0, claimedUntil: null, enqueuedAt: event.enqueuedAt });
  });

  it("waits for the drain when an endpoint takes its type, or every type", async () => {
    for (const types of [JSON.stringify(["listing.created"]), null]) {
      const t = await makeTenant();
      await endpoint(t.agencyId, types);
      await create(t);
      expect((await created(t)).enqueuedAt).toBeNull();
    }
  });

  it("a conditional event follows the same rule", async () => {
    const t = await makeTenant();
    await endpoint(t.agencyId, JSON.stringify(["listing.status_changed"]));
    const listing = await create(t);
    const d = db();
    const changed = (status: string) => [
      d.update(listings).set({ status: "Active" }).where(eq(listings.id, listing.id)),
      outboxInsertIfChanged(d, t.agencyId, "listing.status_changed", {
        listing_number: listing.listingNumber,
        status: "Active",
        previous_status: status,
      }),
      outboxInsertIfChanged(d, t.agencyId, "listing.cancelled", {
        listing_number: listing.listingNumber,
        status: "Cancelled",
        previous_status: status,
        reason: null,
        source: "api",
        cancelled_at: new Date().toISOString(),
      }),
    ];
    await d.batch(changed("Coming Soon") as never);
    expect((await outbox(t.agencyId, "listing.status_changed"))[0]!.enqueuedAt).toBeNull();
    expect((await outbox(t.agencyId, "listing.cancelled"))[0]!.enqueuedAt).not.toBeNull();
  });

  it("an endpoint whose stored list cannot be read leaves the event to the drain, which records why", async () => {
    const logs = captureErrorLogs();
    const t = await makeTenant();
    const broken = await endpoint(t.agencyId, "{not json");
    await create(t);
    expect((await created(t)).enqueuedAt).toBeNull();
    await drainOutbox(env);
    const event = await created(t);
    expect(event).toMatchObject({ attempts: 1, enqueuedAt: null });
    expect(event.lastError).toContain(broken);
    expect(logs).toContainEqual(expect.objectContaining({ job: "outbox_drain", event_id: event.id, attempts: 1 }));
  });
});
