import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq, inArray, or } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { reconcileCalendars } from "../../src/calendar/reconcile/run";
import { calendarConnections, deliveryDestinations, listings, mediaDeliveries } from "../../src/db/schema";
import { EVENT_TYPES } from "../../src/domain/events/catalog";
import { createUser } from "../../src/domain/people/hierarchy";
import worker from "../../src/index";
import type { MediaJob } from "../../src/media/jobs";
import {
  call,
  db,
  expectError,
  internal,
  makeListing,
  makeTenant,
  mockFetch,
  outbox,
  type Tenant,
  unique,
} from "../support/harness";

afterEach(() => vi.restoreAllMocks());

const EMPTY_CALENDAR = "BEGIN:VCALENDAR\r\nEND:VCALENDAR";
const availability = (userId: string) =>
  `/api/v1/scheduling/availability?from=2026-12-01T00:00:00Z&to=2026-12-03T00:00:00Z&user_id=${userId}`;

/**
 * Agency A's team lead and the agent under them set up storage and a calendar while at A,
 * and are named on one of A's listings, which has a shoot on the calendar. Then the team
 * lead moves under agency B's owner, taking the agent along.
 */
async function moveOutOfAgency() {
  const a = await makeTenant();
  const b = await makeTenant();
  const moverFeed = `https://cal.example.com/${unique("mover")}.ics`;
  const stayerFeed = `https://cal.example.com/${unique("stayer")}.ics`;
  const destination = await internal(`/internal/v1/users/${a.agent.id}/delivery-destination`, {
    method: "PUT",
    body: {
      endpoint_url: "https://s3.storage.test",
      bucket: "agent-bucket",
      region: "us-east-1",
      access_key_id: "AKIDAGENT",
      secret_access_key: "agent-secret-access-key-0123456789",
    },
  });
  expect(destination.status, destination.text).toBe(200);
  for (const [userId, feed] of [
    [a.agent.id, moverFeed],
    [a.owner.id, stayerFeed],
  ] as const) {
    const connected = await internal(`/internal/v1/users/${userId}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: feed },
    });
    expect(connected.status, connected.text).toBe(200);
  }
  const listing = await call("/api/v1/listings", {
    key: a.key,
    body: {
      address: `${unique("addr")} Harbour Street`,
      owner_user_id: a.owner.id,
      agent_one_id: a.agent.id,
      agent_two_id: a.teamLead.id,
    },
  });
  expect(listing.status, listing.text).toBe(201);
  const listingNumber = listing.json.listing_number as string;
  const shoot = await internal(`/internal/v1/agencies/${a.agencyId}/listings/${listingNumber}/appointments`, {
    method: "POST",
    body: { starts_at: "2026-12-02T17:00:00Z", ends_at: "2026-12-02T19:00:00Z", calendar_event_id: "shoot-1" },
  });
  expect(shoot.status, shoot.text).toBe(201);

  const moved = await internal(`/internal/v1/users/${a.teamLead.id}/manager`, {
    method: "PATCH",
    body: { manager_id: b.owner.id },
  });
  expect(moved.status, moved.text).toBe(200);
  expect(moved.json.agency_id).toBe(b.agencyId);
  return { a, b, listingNumber, moverFeed, stayerFeed, movers: [a.teamLead.id, a.agent.id] };
}

/** Announces a photo on the listing and PUTs its bytes through the Worker, as an uploader does. */
async function uploadPhoto(t: Tenant, listingNumber: string) {
  const announced = await call("/api/v1/media/upload", {
    key: t.key,
    body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 64, listing_number: listingNumber },
  });
  expect(announced.status, announced.text).toBe(201);
  const res = await worker.fetch(
    new Request(announced.json.url, {
      method: "PUT",
      headers: announced.json.headers,
      body: new Uint8Array(64).fill(7),
    }),
    env,
    createExecutionContext(),
  );
  expect(res.status, await res.clone().text()).toBe(200);
}

/** Every outbound fetch's URL, each answered with an empty calendar. */
function watchCalendars() {
  const fetched: string[] = [];
  mockFetch((req) => {
    fetched.push(req.url);
    return new Response(EMPTY_CALENDAR);
  });
  return fetched;
}

describe("a user who moves to another agency", () => {
  it("takes nothing of the old agency along: its uploads and shoots no longer reach their storage or calendar", async () => {
    const { a, listingNumber, moverFeed, stayerFeed } = await moveOutOfAgency();
    const jobs: MediaJob[] = [];
    vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body: unknown) => {
      jobs.push(body as MediaJob);
      return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } } as unknown as QueueSendResponse;
    });
    const fetched = watchCalendars();

    // An upload completed on A's listing is delivered to nobody: A's remaining people set up no storage.
    await uploadPhoto(a, listingNumber);
    expect(jobs.filter((j) => j.kind === "delivery")).toEqual([]);
    expect(await db().select().from(mediaDeliveries).where(eq(mediaDeliveries.agencyId, a.agencyId)).all()).toEqual([]);

    // A's shoot is checked against the calendar of who took the listing over, never the mover's.
    const run = await reconcileCalendars(env, { agencyId: a.agencyId, limit: 50 });
    expect(run, JSON.stringify(fetched)).toMatchObject({ checked: 1, skipped: 0 });
    expect(fetched).toEqual([stayerFeed]);
    // A cannot ask for the mover's availability either.
    expectError(await call(availability(a.agent.id), { key: a.key }), 404, "user_not_found");
    expect(fetched).not.toContain(moverFeed);
  });

  it("leaves nothing of theirs at the old agency, and brings nothing set up there to the new one", async () => {
    const { a, b, listingNumber, moverFeed, movers } = await moveOutOfAgency();
    const fetched = watchCalendars();

    // A's listing passes from the movers to the nearest manager they left behind; the optional agent is cleared.
    const listing = await call(`/api/v1/listings/${listingNumber}`, { key: a.key });
    expect(listing.json, listing.text).toMatchObject({
      owner_user_id: a.owner.id,
      agent_one_id: a.owner.id,
      agent_two_id: null,
    });
    const naming = await db()
      .select({ id: listings.id })
      .from(listings)
      .where(
        and(
          eq(listings.agencyId, a.agencyId),
          or(
            inArray(listings.ownerUserId, movers),
            inArray(listings.agentOneId, movers),
            inArray(listings.agentTwoId, movers),
          ),
        ),
      )
      .all();
    expect(naming).toEqual([]);
    const updated = (await outbox(a.agencyId, "listing.updated")).map((e) => e.data);
    expect(updated).toEqual([
      {
        listing_number: listingNumber,
        changed_fields: ["agent_one_id", "agent_two_id"],
        address: listing.json.address,
        owner_user_id: a.owner.id,
        agent_one_id: a.owner.id,
        agent_two_id: null,
      },
    ]);
    expect(EVENT_TYPES["listing.updated"].data.parse(updated[0])).toEqual(updated[0]);

    // The storage and calendar they set up at A are gone with their credentials, so B never reads them.
    for (const table of [deliveryDestinations, calendarConnections]) {
      expect(await db().select().from(table).where(inArray(table.userId, movers)).all()).toEqual([]);
    }
    expectError(
      await internal(`/internal/v1/users/${a.agent.id}/delivery-destination`),
      404,
      "delivery_destination_not_found",
    );
    expectError(await call(availability(a.agent.id), { key: b.key }), 403, "calendar_not_connected");
    expect(fetched).not.toContain(moverFeed);
  });

  it("is announced to the new agency without any of the old agency's ids, and to the old one not at all", async () => {
    const { a, b } = await moveOutOfAgency();
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

  it("from the top of a hierarchy hands its listings to the agency's first active owner who stays", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const second = await createUser(db(), {
      agencyId: a.agencyId,
      role: "broker",
      name: "Second owner",
      email: `${unique("second")}@example.test`,
    });
    const listing = await makeListing(a);
    const moved = await internal(`/internal/v1/users/${a.owner.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    const [row] = await db().select().from(listings).where(eq(listings.agencyId, a.agencyId)).all();
    expect(row).toMatchObject({ listingNumber: listing.listing_number, ownerUserId: second.id, agentOneId: second.id });
    expect((await outbox(a.agencyId, "listing.updated")).map((e) => e.data)).toEqual([
      expect.objectContaining({
        changed_fields: ["owner_user_id", "agent_one_id"],
        owner_user_id: second.id,
        agent_one_id: second.id,
      }),
    ]);
  });

  it("inside the agency keeps what they set up, and the listings that name them", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.agent.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: `https://cal.example.com/${unique("agent")}.ics` },
    });
    const listing = await call("/api/v1/listings", {
      key: t.key,
      body: { address: `${unique("addr")} Quay`, owner_user_id: t.owner.id, agent_one_id: t.agent.id },
    });
    const moved = await internal(`/internal/v1/users/${t.agent.id}/manager`, {
      method: "PATCH",
      body: { manager_id: t.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    expect((await outbox(t.agencyId, "user.hierarchy_changed")).map((e) => e.data)).toEqual([
      { user_id: t.agent.id, managerId: t.owner.id, previous_manager_id: t.teamLead.id, agency_changed: false },
    ]);
    expect(
      await db().select().from(calendarConnections).where(eq(calendarConnections.userId, t.agent.id)).all(),
    ).toHaveLength(1);
    const after = await call(`/api/v1/listings/${listing.json.listing_number}`, { key: t.key });
    expect(after.json.agent_one_id).toBe(t.agent.id);
    expect(await outbox(t.agencyId, "listing.updated")).toEqual([]);
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
