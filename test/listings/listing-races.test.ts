import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import type { Db } from "../../src/db/client";
import { appointments } from "../../src/db/schema";
import { scheduleAppointment } from "../../src/domain/appointments";
import { cancelListing } from "../../src/domain/listings/cancel";
import { findListing } from "../../src/domain/listings/reads";
import { floorplanValue, MAX_FLOORPLANS, writeSection } from "../../src/domain/listings/sections";
import { call, db, expectError, makeListing, makeTenant, outbox } from "../support/harness";

const hours = (h: number) => new Date(Date.now() + h * 3600_000).toISOString();

/** `d`, except that `meanwhile` runs (once) right before its first batch: a write that lands between reads and write. */
function interleaved(d: Db, meanwhile: () => Promise<unknown>): Db {
  let ran = false;
  return new Proxy(d, {
    get(target, prop, receiver) {
      if (prop !== "batch") return Reflect.get(target, prop, receiver);
      return async (statements: Parameters<Db["batch"]>[0]) => {
        if (!ran) {
          ran = true;
          await meanwhile();
        }
        return target.batch(statements);
      };
    },
  });
}

const shootsOf = (listingId: string) =>
  db().select().from(appointments).where(eq(appointments.listingId, listingId)).all();

describe("a cancel racing a booked shoot", () => {
  it("a shoot booked inside the window while a cancel decides makes the cancel lose the no-fee window", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const d = db();
    const listing = await findListing(d, t.agencyId, listing_number);
    const book = () => scheduleAppointment(d, listing, { startsAt: hours(10), endsAt: hours(12), source: "dashboard" });
    await expect(cancelListing(interleaved(d, book), listing, { source: "api" })).rejects.toMatchObject({
      code: "outside_cancellation_window",
    });
    expect((await findListing(d, t.agencyId, listing_number)).status).toBe("Coming Soon");
    expect((await shootsOf(listing.id)).map((a) => a.status)).toEqual(["scheduled"]);
    expect(await outbox(t.agencyId, "listing.cancelled")).toEqual([]);
  });

  it("a shoot booked outside the window while a cancel decides is cancelled with the listing", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const d = db();
    const listing = await findListing(d, t.agencyId, listing_number);
    const book = () => scheduleAppointment(d, listing, { startsAt: hours(72), endsAt: hours(74), source: "dashboard" });
    const cancelled = await cancelListing(interleaved(d, book), listing, { source: "api" });
    expect(cancelled.status).toBe("Cancelled");
    const [shoot] = await shootsOf(listing.id);
    expect(shoot!.status).toBe("cancelled");
    expect((await outbox(t.agencyId, "appointment.cancelled")).map((e) => e.data)).toEqual([
      expect.objectContaining({ appointment_id: shoot!.id, reason: "listing_cancelled" }),
    ]);
    expect(await outbox(t.agencyId, "listing.cancelled")).toHaveLength(1);
  });

  it("a shoot booked on a listing cancelled since it was read is refused and writes nothing", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const d = db();
    const stale = await findListing(d, t.agencyId, listing_number);
    await cancelListing(d, stale, { source: "api" });
    await expect(
      scheduleAppointment(d, stale, { startsAt: hours(72), endsAt: hours(74), source: "dashboard" }),
    ).rejects.toMatchObject({ code: "listing_already_cancelled" });
    expect(await shootsOf(stale.id)).toEqual([]);
    expect(await outbox(t.agencyId, "appointment.scheduled")).toEqual([]);
  });

  it("a cancel and a booking inside the window sent together never both win", async () => {
    const t = await makeTenant();
    const made = await Promise.all(Array.from({ length: 4 }, () => makeListing(t)));
    await Promise.all(
      made.map(async ({ listing_number }) => {
        const [cancel, book] = await Promise.all([
          call(`/api/v1/listings/${listing_number}/cancel`, { key: t.key, body: {} }),
          call(`/api/v1/test_helpers/listings/${listing_number}/appointments`, {
            key: t.key,
            body: { starts_at: hours(10), ends_at: hours(12) },
          }),
        ]);
        const listing = await findListing(db(), t.agencyId, listing_number);
        const scheduled = (await shootsOf(listing.id)).filter((a) => a.status === "scheduled");
        if (cancel.status === 200) {
          expectError(book, 409, "listing_already_cancelled");
          expect(scheduled).toEqual([]);
        } else {
          expectError(cancel, 409, "outside_cancellation_window");
          expect(book.status, book.text).toBe(201);
          expect(listing.status).toBe("Coming Soon");
          expect(scheduled).toHaveLength(1);
        }
      }),
    );
  });
});

describe("floorplan cap under concurrent appends", () => {
  it("two appends decided on a list of 49 URLs: one lands, the other is invalid_section_payload", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const d = db();
    const urls = Array.from({ length: MAX_FLOORPLANS - 1 }, (_, i) => `https://cdn.example.com/${i}.pdf`);
    const at49 = await writeSection(d, await findListing(d, t.agencyId, listing_number), "floorplan", "replace", {
      floorplanUrls: urls,
    });
    const append = (url: string) =>
      writeSection(d, at49, "floorplan", "append", floorplanValue(at49.floorplanUrls, { operation: "append", url }));
    const results = await Promise.allSettled([
      append("https://cdn.example.com/x.pdf"),
      append("https://cdn.example.com/y.pdf"),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual(["fulfilled", "rejected"]);
    const refused = results.find((r) => r.status === "rejected") as PromiseRejectedResult;
    expect(refused.reason).toMatchObject({ code: "invalid_section_payload", details: { field: "url" } });
    expect((await findListing(d, t.agencyId, listing_number)).floorplanUrls).toHaveLength(MAX_FLOORPLANS);
    expect(
      (await outbox(t.agencyId, "listing.section_modified")).filter((e) => (e.data as any).operation === "append"),
    ).toHaveLength(1);
  });

  it("appends sent together never take the list past the cap", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const path = `/api/v1/listings/${listing_number}/sections/floorplan`;
    const urls = Array.from({ length: MAX_FLOORPLANS - 2 }, (_, i) => `https://cdn.example.com/${i}.pdf`);
    const replaced = await call(path, { method: "PATCH", key: t.key, body: { operation: "replace", urls } });
    expect(replaced.status, replaced.text).toBe(200);
    const results = await Promise.all(
      Array.from({ length: 4 }, (_, i) =>
        call(path, {
          method: "PATCH",
          key: t.key,
          body: { operation: "append", url: `https://cdn.example.com/a${i}.pdf` },
        }),
      ),
    );
    expect(results.filter((r) => r.status === 200)).toHaveLength(2);
    for (const r of results.filter((r) => r.status !== 200)) expectError(r, 422, "invalid_section_payload");
    const after = await call(`/api/v1/listings/${listing_number}`, { key: t.key });
    expect(after.json.sections.floorplan).toHaveLength(MAX_FLOORPLANS);
  });
});

describe("reactivating a cancelled listing", () => {
  it("PATCH …/status from Cancelled to Active clears cancelled_at and the cancellation reason", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t, { activate: true });
    const cancelled = await call(`/api/v1/listings/${listing_number}/cancel`, {
      key: t.key,
      body: { reason: "Seller withdrew" },
    });
    expect(cancelled.json.cancelled_at, cancelled.text).toEqual(expect.any(String));
    const r = await call(`/api/v1/listings/${listing_number}/status`, {
      method: "PATCH",
      key: t.key,
      body: { new_status: "Active" },
    });
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ status: "Active", cancelled_at: null });
    expect(await findListing(db(), t.agencyId, listing_number)).toMatchObject({
      status: "Active",
      cancelledAt: null,
      cancellationReason: null,
    });
    expect((await call(`/api/v1/listings/${listing_number}`, { key: t.key })).json.cancelled_at).toBeNull();
    expect((await outbox(t.agencyId, "listing.status_changed")).map((e) => e.data)).toContainEqual({
      listing_number,
      status: "Active",
      previous_status: "Cancelled",
    });
  });
});
