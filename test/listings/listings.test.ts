import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { appointments } from "../../src/db/schema";
import { mintKey } from "../../src/domain/api-keys";
import { cancelListing } from "../../src/domain/listings/cancel";
import { createListing } from "../../src/domain/listings/create";
import { findListing } from "../../src/domain/listings/reads";
import {
  BASE,
  call,
  db,
  direct,
  expectError,
  internal,
  keyed,
  makeListing,
  makeTenant,
  outbox,
  unique,
} from "../support/harness";
import { countD1 } from "../support/webhook-fixtures";

const hours = (h: number) => new Date(Date.now() + h * 3600_000).toISOString();

describe("POST /api/v1/listings", () => {
  it("creates a Coming Soon listing with a minted number, public_url, and listing.created", async () => {
    const t = await makeTenant();
    const r = await call("/api/v1/listings", {
      key: t.key,
      body: {
        address: "12 Harbour Street",
        owner_user_id: t.owner.id,
        agent_one_id: t.agent.id,
        agent_two_id: t.teamLead.id,
      },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json).toMatchObject({
      address: "12 Harbour Street",
      status: "Coming Soon",
      is_activated: false,
      owner_user_id: t.owner.id,
      agent_one_id: t.agent.id,
      agent_two_id: t.teamLead.id,
    });
    expect(r.json.listing_number).toMatch(/^[a-z0-9]{7}$/);
    expect(r.json.public_url).toBe(`http://localhost:8787/property/${r.json.listing_number}`);
    expect(r.json.created_at).toMatch(/Z$/);
    const events = await outbox(t.agencyId, "listing.created");
    expect(events).toHaveLength(1);
    expect(events[0]).toMatchObject({
      apiVersion: "2026-11-01",
      data: { listing_number: r.json.listing_number, status: "Coming Soon" },
    });
    expect(events[0]!.id).toMatch(/^evt_/);
  });

  it("accepts a chosen number once per agency; another agency may use it", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    await makeListing(a, { listingNumber: "abc1234" });
    const again = await call("/api/v1/listings", {
      key: a.key,
      body: { address: "x", owner_user_id: a.owner.id, agent_one_id: a.agent.id, listing_number: "abc1234" },
    });
    expectError(again, 409, "listing_number_taken");
    await makeListing(b, { listingNumber: "abc1234" });
  });

  it("a race on one listing_number creates exactly one listing", async () => {
    const t = await makeTenant();
    const body = {
      address: "Race Street",
      owner_user_id: t.owner.id,
      agent_one_id: t.agent.id,
      listing_number: "race123",
    };
    const results = await Promise.all(Array.from({ length: 10 }, () => call("/api/v1/listings", { key: t.key, body })));
    expect(results.filter((r) => r.status === 201)).toHaveLength(1);
    for (const r of results.filter((r) => r.status !== 201)) expectError(r, 409, "listing_number_taken");
    expect(await outbox(t.agencyId, "listing.created")).toHaveLength(1);
  });

  it("refuses people outside the hierarchy with agent_not_in_hierarchy, storing nothing", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const r = await call("/api/v1/listings", {
      key: a.key,
      body: { address: "x", owner_user_id: a.owner.id, agent_one_id: b.agent.id, agent_two_id: "usr_nobody" },
    });
    expectError(r, 422, "agent_not_in_hierarchy");
    expect(r.json.error.details.fields).toEqual(["agent_one_id", "agent_two_id"]);
    expect((await call("/api/v1/listings", { key: a.key })).json.data).toEqual([]);
    expect(await outbox(a.agencyId, "listing.created")).toEqual([]);
  });

  it("creates in one D1 round trip; a person outside the agency fails that write, then the agency is read", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const d1 = countD1();
    try {
      const people = { address: "1 One Trip", ownerUserId: a.owner.id };
      await createListing(database(env.DB), a.agencyId, "https://site.test", { ...people, agentOneId: a.agent.id });
      expect(d1.roundTrips()).toBe(1);
      await expect(
        createListing(database(env.DB), a.agencyId, "https://site.test", { ...people, agentOneId: b.agent.id }),
      ).rejects.toMatchObject({ code: "agent_not_in_hierarchy", details: { fields: ["agent_one_id"] } });
      expect(d1.roundTrips()).toBe(3);
    } finally {
      d1.stop();
    }
    expect(await outbox(a.agencyId, "listing.created")).toHaveLength(1);
  });

  it("validates the body: pattern, required fields, renamed fields", async () => {
    const t = await makeTenant();
    expectError(
      await call("/api/v1/listings", {
        key: t.key,
        body: { address: "x", owner_user_id: t.owner.id, agent_one_id: t.agent.id, listing_number: "ABC1234" },
      }),
      422,
      "validation_string_pattern",
    );
    expectError(
      await call("/api/v1/listings", { key: t.key, body: { owner_user_id: t.owner.id, agent_one_id: t.agent.id } }),
      422,
      "validation_missing_required",
    );
    const renamed = await call("/api/v1/listings", {
      key: t.key,
      body: { address: "x", owner_user_id: t.owner.id, agent_id: t.agent.id },
    });
    expect(renamed.status, renamed.text).toBe(422);
    expect(JSON.stringify(renamed.json.error.details)).toContain('"to":"agent_one_id"');
    expectError(await call("/api/v1/listings", { key: t.key, body: {} }), 422, "validation_missing_required");
  });

  it("is refused to keys without listings:write", async () => {
    const t = await makeTenant({ scopes: ["listings:read"] });
    expectError(
      await call("/api/v1/listings", {
        key: t.key,
        body: { address: "x", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
      }),
      403,
      "auth.scope_denied",
    );
  });
});

describe("reading listings", () => {
  it("gets one listing; another agency's is listing_not_found", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const l = await makeListing(a);
    expect((await call(`/api/v1/listings/${l.listing_number}`, { key: a.key })).json.listing_number).toBe(
      l.listing_number,
    );
    expectError(await call(`/api/v1/listings/${l.listing_number}`, { key: b.key }), 404, "listing_not_found");
    expectError(await call("/api/v1/listings/NOTVALID", { key: a.key }), 404, "listing_not_found");
  });

  it("pages by cursor while rows are inserted, without skipping or repeating, and filters by status", async () => {
    const t = await makeTenant();
    const first = [await makeListing(t), await makeListing(t), await makeListing(t)];
    const p1 = await call("/api/v1/listings?limit=2", { key: t.key });
    expect(p1.json.data.map((l: any) => l.listing_number)).toEqual(first.slice(0, 2).map((l) => l.listing_number));
    const late = await makeListing(t, { activate: true });
    const p2 = await call(`/api/v1/listings?limit=2&cursor=${encodeURIComponent(p1.json.next_cursor)}`, { key: t.key });
    expect(p2.json.data.map((l: any) => l.listing_number)).toEqual([first[2]!.listing_number, late.listing_number]);
    expect(p2.json.next_cursor).toBe("");
    await internal(`/internal/v1/agencies/${t.agencyId}/listings/${late.listing_number}/activate`, { method: "POST" });
    await call(`/api/v1/listings/${late.listing_number}/status`, {
      method: "PATCH",
      key: t.key,
      body: { new_status: "Active" },
    });
    const active = await call("/api/v1/listings?status=Active", { key: t.key });
    expect(active.json.data.map((l: any) => l.listing_number)).toEqual([late.listing_number]);
    expectError(await call("/api/v1/listings?status=active", { key: t.key }), 422, "request_query_invalid");
  });
});

describe("the status state table", () => {
  it("a listing not yet activated does not move: listing_not_activated", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    expectError(
      await call(`/api/v1/listings/${l.listing_number}/status`, {
        method: "PATCH",
        key: t.key,
        body: { new_status: "Active" },
      }),
      409,
      "listing_not_activated",
    );
    expect(await outbox(t.agencyId, "listing.status_changed")).toEqual([]);
  });

  it("in the sandbox, listing_not_activated names the test helper that activates; in live it does not", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const helper = `POST /api/v1/test_helpers/listings/${l.listing_number}/activate`;
    const patch = { method: "PATCH", body: JSON.stringify({ new_status: "Active" }) };
    // A fresh idempotency key each: the live call must not replay the sandbox answer.
    const init = () => ({
      ...patch,
      headers: { "Content-Type": "application/json", "X-Idempotency-Key": unique("i") },
    });

    const sandbox = await direct(keyed(`/api/v1/listings/${l.listing_number}/status`, t.key, init()));
    expectError(sandbox, 409, "listing_not_activated");
    expect(sandbox.json.error.message, sandbox.text).toContain(`In the sandbox, do it yourself with ${helper}.`);
    expect(sandbox.json.error.details, sandbox.text).toEqual({
      status: "Coming Soon",
      listing_number: l.listing_number,
      test_helper: helper,
    });

    const { secret } = await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "live" });
    const live = await direct(keyed(`/api/v1/listings/${l.listing_number}/status`, secret, init()), {
      API_MODE: "live",
    });
    expectError(live, 409, "listing_not_activated");
    expect(live.text).not.toContain("test_helpers");
    expect(live.json.error.details, live.text).toEqual({ status: "Coming Soon", listing_number: l.listing_number });
  });

  it("the error catalog's listing_not_activated entry names the helper in the sandbox only", async () => {
    const entry = async (mode: "test" | "live") => {
      const r = await direct(new Request(`${BASE}/api/v1/errors`), { API_MODE: mode });
      expect(r.status, r.text).toBe(200);
      return r.json.data.find((e: { code: string }) => e.code === "listing_not_activated").action as string;
    };
    expect(await entry("test")).toContain("POST /api/v1/test_helpers/listings/{listing_number}/activate");
    expect(await entry("live")).toBe("Activate the listing in the dashboard first, then change its status.");
  });

  it("an activated listing moves to a different status and emits listing.status_changed", async () => {
    const t = await makeTenant();
    const l = await makeListing(t, { activate: true });
    const r = await call(`/api/v1/listings/${l.listing_number}/status`, {
      method: "PATCH",
      key: t.key,
      body: { new_status: "Active" },
    });
    expect(r.json, r.text).toMatchObject({ status: "Active", is_activated: true });
    await call(`/api/v1/listings/${l.listing_number}/status`, {
      method: "PATCH",
      key: t.key,
      body: { new_status: "Sold" },
    });
    expect((await outbox(t.agencyId, "listing.status_changed")).map((e) => e.data)).toEqual([
      { listing_number: l.listing_number, status: "Active", previous_status: "Coming Soon" },
      { listing_number: l.listing_number, status: "Sold", previous_status: "Active" },
    ]);
  });

  it("the same status again is no_op_transition; Cancelled is not settable here", async () => {
    const t = await makeTenant();
    const l = await makeListing(t, { activate: true });
    expectError(
      await call(`/api/v1/listings/${l.listing_number}/status`, {
        method: "PATCH",
        key: t.key,
        body: { new_status: "Coming Soon" },
      }),
      409,
      "no_op_transition",
    );
    expectError(
      await call(`/api/v1/listings/${l.listing_number}/status`, {
        method: "PATCH",
        key: t.key,
        body: { new_status: "Cancelled" },
      }),
      422,
      "validation_enum_not_allowed",
    );
    expectError(
      await call(`/api/v1/listings/zzzzzzz/status`, { method: "PATCH", key: t.key, body: { new_status: "Sold" } }),
      404,
      "listing_not_found",
    );
  });
});

describe("cancellation", () => {
  it("a cancellation that lost its race touches nothing: shoots scheduled since stay scheduled", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const d = db();
    const stale = await findListing(d, t.agencyId, listing_number);
    await cancelListing(d, stale, { source: "dashboard" });
    // A shoot is booked after the first cancellation (as the dashboard may do); the
    // second cancellation, decided on the stale listing, reads it and loses its race.
    await d.insert(appointments).values({
      id: `apt_${unique("late")}`,
      agencyId: t.agencyId,
      listingId: stale.id,
      startsAt: hours(72),
      endsAt: hours(74),
    });
    await expect(cancelListing(d, stale, { source: "dashboard" })).rejects.toMatchObject({
      code: "listing_already_cancelled",
    });
    const shoots = await d.select().from(appointments).where(eq(appointments.listingId, stale.id)).all();
    expect(shoots.map((a) => a.status)).toEqual(["scheduled"]);
    expect(await outbox(t.agencyId, "appointment.cancelled")).toEqual([]);
    expect(await outbox(t.agencyId, "listing.cancelled")).toHaveLength(1);
  });

  it(
    "inside the window: cancels, cancels the shoots, emits once; a second cancel is " + "listing_already_cancelled",
    async () => {
      const t = await makeTenant();
      const l = await makeListing(t);
      const apt = await internal(`/internal/v1/agencies/${t.agencyId}/listings/${l.listing_number}/appointments`, {
        method: "POST",
        body: { starts_at: hours(72), ends_at: hours(74) },
      });
      expect(apt.status, apt.text).toBe(201);
      const r = await call(`/api/v1/listings/${l.listing_number}/cancel`, {
        key: t.key,
        body: { reason: "Seller withdrew" },
      });
      expect(r.json, r.text).toMatchObject({ status: "Cancelled", cancelled_at: expect.any(String) });
      expectError(
        await call(`/api/v1/listings/${l.listing_number}/cancel`, { key: t.key, body: {} }),
        409,
        "listing_already_cancelled",
      );
      expect((await outbox(t.agencyId, "listing.cancelled")).map((e) => e.data)).toEqual([
        expect.objectContaining({
          listing_number: l.listing_number,
          reason: "Seller withdrew",
          source: "api",
          previous_status: "Coming Soon",
        }),
      ]);
      expect((await outbox(t.agencyId, "appointment.cancelled")).map((e) => e.data)).toEqual([
        expect.objectContaining({ appointment_id: apt.json.id, reason: "listing_cancelled" }),
      ]);
    },
  );

  it("concurrent cancels emit one listing.cancelled", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const results = await Promise.all(
      Array.from({ length: 5 }, () => call(`/api/v1/listings/${l.listing_number}/cancel`, { key: t.key, body: {} })),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(1);
    expect(await outbox(t.agencyId, "listing.cancelled")).toHaveLength(1);
  });

  it("past the no-fee window: outside_cancellation_window; the dashboard may still cancel", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    await internal(`/internal/v1/agencies/${t.agencyId}/listings/${l.listing_number}/appointments`, {
      method: "POST",
      body: { starts_at: hours(10), ends_at: hours(12) },
    });
    const r = await call(`/api/v1/listings/${l.listing_number}/cancel`, { key: t.key, body: {} });
    expectError(r, 409, "outside_cancellation_window");
    expect(Date.parse(r.json.error.details.cutoff)).toBeLessThan(Date.now());
    expect((await call(`/api/v1/listings/${l.listing_number}`, { key: t.key })).json.status).toBe("Coming Soon");
    const dash = await internal(`/internal/v1/agencies/${t.agencyId}/listings/${l.listing_number}/cancel`, {
      method: "POST",
      body: { reason: "late" },
    });
    expect(dash.json.status, dash.text).toBe("Cancelled");
    expect((await outbox(t.agencyId, "listing.cancelled")).map((e) => (e.data as any).source)).toEqual(["dashboard"]);
  });
});

describe("sections", () => {
  it("floorplan: set, append, replace; each emits listing.section_modified", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const path = `/api/v1/listings/${l.listing_number}/sections/floorplan`;
    await call(path, { method: "PATCH", key: t.key, body: { operation: "set", url: "https://cdn.example.com/a.pdf" } });
    await Promise.all([
      call(path, { method: "PATCH", key: t.key, body: { operation: "append", url: "https://cdn.example.com/b.pdf" } }),
      call(path, { method: "PATCH", key: t.key, body: { operation: "append", url: "https://cdn.example.com/c.pdf" } }),
    ]);
    const after = await call(`/api/v1/listings/${l.listing_number}`, { key: t.key });
    expect(after.json.sections.floorplan[0]).toBe("https://cdn.example.com/a.pdf");
    expect([...after.json.sections.floorplan].sort()).toEqual([
      "https://cdn.example.com/a.pdf",
      "https://cdn.example.com/b.pdf",
      "https://cdn.example.com/c.pdf",
    ]);
    const replaced = await call(path, {
      method: "PATCH",
      key: t.key,
      body: { operation: "replace", urls: ["https://cdn.example.com/z.pdf"] },
    });
    expect(replaced.json.sections.floorplan, replaced.text).toEqual(["https://cdn.example.com/z.pdf"]);
    expect((await outbox(t.agencyId, "listing.section_modified")).map((e) => (e.data as any).operation)).toEqual([
      "set",
      "append",
      "append",
      "replace",
    ]);
  });

  it("matterport: set and remove", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const path = `/api/v1/listings/${l.listing_number}/sections/matterport`;
    const set = await call(path, {
      method: "PATCH",
      key: t.key,
      body: { operation: "set", url: "https://my.matterport.com/show/?m=abc" },
    });
    expect(set.json.sections.matterport, set.text).toBe("https://my.matterport.com/show/?m=abc");
    const removed = await call(path, { method: "PATCH", key: t.key, body: { operation: "remove" } });
    expect(removed.json.sections.matterport).toBeNull();
  });

  it("a write that leaves the section as it is emits no event and keeps the version", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const mp = `/api/v1/listings/${l.listing_number}/sections/matterport`;
    const fp = `/api/v1/listings/${l.listing_number}/sections/floorplan`;
    const url = "https://my.matterport.com/show/?m=same";
    const set = await call(mp, { method: "PATCH", key: t.key, body: { operation: "set", url } });
    expect(set.status, set.text).toBe(200);
    const again = await call(mp, { method: "PATCH", key: t.key, body: { operation: "set", url } });
    expect(again.status, again.text).toBe(200);
    expect(again.json).toEqual(set.json);
    expect(again.headers.get("etag")).toBe(set.headers.get("etag"));
    // A stale precondition is still refused, though nothing would change.
    expectError(
      await call(mp, { method: "PATCH", key: t.key, body: { operation: "set", url }, headers: { "If-Match": '"1"' } }),
      412,
      "resource_version_mismatch",
    );
    const plans = ["https://cdn.example.com/a.pdf", "https://cdn.example.com/b.pdf"];
    const replaced = await call(fp, { method: "PATCH", key: t.key, body: { operation: "replace", urls: plans } });
    expect(replaced.status, replaced.text).toBe(200);
    const idempotencyKey = crypto.randomUUID();
    const same = await call(fp, {
      method: "PATCH",
      key: t.key,
      idempotencyKey,
      body: { operation: "replace", urls: plans },
    });
    expect(same.status, same.text).toBe(200);
    expect(same.headers.get("etag")).toBe(replaced.headers.get("etag"));
    const replay = await call(fp, {
      method: "PATCH",
      key: t.key,
      idempotencyKey,
      body: { operation: "replace", urls: plans },
    });
    expect(replay.headers.get("X-Idempotent-Replay"), replay.text).toBe("true");
    expect(replay.json).toEqual(same.json);
    await call(mp, { method: "PATCH", key: t.key, body: { operation: "remove" } });
    const removedAgain = await call(mp, { method: "PATCH", key: t.key, body: { operation: "remove" } });
    expect(removedAgain.status, removedAgain.text).toBe(200);
    expect((await outbox(t.agencyId, "listing.section_modified")).map((e) => (e.data as any).operation)).toEqual([
      "set",
      "replace",
      "remove",
    ]);
    const after = await call(`/api/v1/listings/${l.listing_number}`, { key: t.key });
    expect(after.headers.get("etag")).toBe(removedAgain.headers.get("etag"));
    expect(after.json.sections).toMatchObject({ floorplan: plans, matterport: null });
  });

  it("a semantic failure is invalid_section_payload naming the field, and changes nothing", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const mp = await call(`/api/v1/listings/${l.listing_number}/sections/matterport`, {
      method: "PATCH",
      key: t.key,
      body: { operation: "set" },
    });
    expectError(mp, 422, "invalid_section_payload");
    expect(mp.json.error.details.field).toBe("url");
    const http = await call(`/api/v1/listings/${l.listing_number}/sections/floorplan`, {
      method: "PATCH",
      key: t.key,
      body: { operation: "set", url: "http://insecure.example.com/a.pdf" },
    });
    expectError(http, 422, "invalid_section_payload");
    const replace = await call(`/api/v1/listings/${l.listing_number}/sections/floorplan`, {
      method: "PATCH",
      key: t.key,
      body: { operation: "replace", url: "https://x.example.com" },
    });
    expect(replace.json.error.details.field, replace.text).toBe("url");
    expect(await outbox(t.agencyId, "listing.section_modified")).toEqual([]);
  });

  it("any other section is section_not_exposed", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    for (const section of ["gallery", "home", "features", "documents"]) {
      expectError(
        await call(`/api/v1/listings/${l.listing_number}/sections/${section}`, {
          method: "PATCH",
          key: t.key,
          body: { operation: "set" },
        }),
        404,
        "section_not_exposed",
      );
    }
  });
});

describe("orders", () => {
  it("lists the listing's invoices and payments by cursor; other agencies see 404", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const l = await makeListing(a);
    const base = `/internal/v1/agencies/${a.agencyId}/listings/${l.listing_number}/orders`;
    const inv = await internal(base, {
      method: "POST",
      body: {
        type: "invoice",
        amount_minor: 24900,
        currency: "USD",
        status: "open",
        provider_reference: `in_${l.listing_number}`,
        issued_at: hours(-2),
      },
    });
    expect(inv.status, inv.text).toBe(201);
    await internal(base, {
      method: "POST",
      body: {
        type: "payment",
        amount_minor: 24900,
        currency: "usd",
        status: "succeeded",
        invoice_id: inv.json.id,
        paid_at: hours(-1),
      },
    });
    expectError(
      await internal(base, {
        method: "POST",
        body: {
          type: "invoice",
          amount_minor: 1,
          currency: "usd",
          status: "open",
          provider_reference: `in_${l.listing_number}`,
        },
      }),
      409,
      "order_already_recorded",
    );
    const p1 = await call(`/api/v1/listings/${l.listing_number}/orders?limit=1`, { key: a.key });
    expect(p1.json.data[0], p1.text).toMatchObject({
      type: "invoice",
      amount_minor: 24900,
      currency: "usd",
      status: "open",
    });
    const p2 = await call(
      `/api/v1/listings/${l.listing_number}/orders?limit=1&cursor=${encodeURIComponent(p1.json.next_cursor)}`,
      { key: a.key },
    );
    expect(p2.json.data[0]).toMatchObject({ type: "payment", invoice_id: inv.json.id });
    expect(p2.json.next_cursor).toBe("");
    expectError(await call(`/api/v1/listings/${l.listing_number}/orders`, { key: b.key }), 404, "listing_not_found");
  });
});

describe("dashboard edits and appointments", () => {
  it("edits emit listing.updated with the changed fields; appointments emit their events", async () => {
    const t = await makeTenant();
    const l = await makeListing(t);
    const base = `/internal/v1/agencies/${t.agencyId}/listings/${l.listing_number}`;
    const edited = await internal(base, {
      method: "PATCH",
      body: { address: "1 New Road", agent_two_id: t.teamLead.id },
    });
    expect(edited.json, edited.text).toMatchObject({ address: "1 New Road", agent_two_id: t.teamLead.id });
    expect((await outbox(t.agencyId, "listing.updated"))[0]!.data).toMatchObject({
      changed_fields: ["address", "agent_two_id"],
      address: "1 New Road",
    });
    const other = await makeTenant();
    expectError(
      await internal(base, { method: "PATCH", body: { agent_one_id: other.agent.id } }),
      422,
      "agent_not_in_hierarchy",
    );
    const apt = await internal(`${base}/appointments`, {
      method: "POST",
      body: { starts_at: hours(48), ends_at: hours(50), calendar_event_id: "evt-1" },
    });
    const newStart = hours(96);
    const moved = await internal(`${base}/appointments/${apt.json.id}`, {
      method: "PATCH",
      body: { starts_at: newStart, ends_at: hours(98) },
    });
    expect(moved.json.starts_at, moved.text).toBe(newStart);
    const cancelled = await internal(`${base}/appointments/${apt.json.id}/cancel`, { method: "POST" });
    expect(cancelled.json.status).toBe("cancelled");
    expectError(
      await internal(`${base}/appointments/${apt.json.id}/cancel`, { method: "POST" }),
      409,
      "appointment_not_scheduled",
    );
    expectError(
      await internal(`${base}/appointments`, { method: "POST", body: { starts_at: hours(5), ends_at: hours(4) } }),
      422,
      "invalid_appointment_time",
    );
    const types = (await outbox(t.agencyId)).map((e) => e.eventType).filter((x) => x.startsWith("appointment."));
    expect(types).toEqual(["appointment.scheduled", "appointment.rescheduled", "appointment.cancelled"]);
  });
});
