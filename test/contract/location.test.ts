import { describe, expect, it } from "vitest";
import { BASE, call, internal, makeListing, makeTenant, unique } from "../support/harness";

/** The path of an absolute Location on this origin. */
function pathOf(location: string | null): string {
  expect(location).not.toBeNull();
  const url = new URL(location!);
  expect(url.origin).toBe(BASE);
  return url.pathname;
}

describe("a 201 names where the created resource is read", () => {
  it("listings, tours, webhook endpoints, uploads and sandbox users: Location reads the same resource", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const creates = [
      {
        path: "/api/v1/listings",
        body: { address: "5 Location Lane", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
        id: (j: any) => j.listing_number,
        readId: (j: any) => j.listing_number,
      },
      {
        path: "/api/v1/tours",
        body: { address: "6 Location Lane", city: "Portside", state: "CA", zipcode: "94110" },
        id: (j: any) => j.tour_number,
        readId: (j: any) => j.tour_number,
      },
      {
        path: "/api/v1/webhooks/endpoints",
        body: { url: "https://hooks.example.com/location", event_types: ["listing.created"] },
        id: (j: any) => j.id,
        readId: (j: any) => j.id,
      },
      {
        path: "/api/v1/media/upload",
        body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 64, listing_number: l.listing_number },
        id: (j: any) => j.upload_id,
        readId: (j: any) => j.upload_id,
      },
      {
        path: "/api/v1/test_helpers/users",
        body: { name: "Lena Location", email: `${unique("l")}@example.com`, role: "agent", manager_id: t.teamLead.id },
        id: (j: any) => j.id,
        readId: (j: any) => j.id,
      },
    ];
    for (const create of creates) {
      const idempotencyKey = crypto.randomUUID();
      const made = await call(create.path, { key: t.key, body: create.body, idempotencyKey });
      expect(made.status, `${create.path}: ${made.text}`).toBe(201);
      const path = pathOf(made.headers.get("location"));
      const read = await call(path, { key: t.key });
      expect(read.status, `${path}: ${read.text}`).toBe(200);
      expect(create.readId(read.json)).toBe(create.id(made.json));
      // A replay repeats it.
      const replay = await call(create.path, { key: t.key, body: create.body, idempotencyKey });
      expect(replay.headers.get("X-Idempotent-Replay")).toBe("true");
      expect(replay.headers.get("location")).toBe(made.headers.get("location"));
    }
  });

  it("on the internal surface too: agencies and users", async () => {
    const agency = await internal("/internal/v1/agencies", {
      body: { name: unique("Location Agency"), kind: "media_agency" },
    });
    expect(agency.status, agency.text).toBe(201);
    const read = await internal(pathOf(agency.headers.get("location")));
    expect(read.status, read.text).toBe(200);
    expect(read.json.id).toBe(agency.json.id);
  });
});
