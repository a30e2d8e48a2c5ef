import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { listings, tours, webhookEndpoints } from "../../src/db/schema";
import { changeStatus } from "../../src/domain/listings/lifecycle";
import { findListing } from "../../src/domain/listings/reads";
import { writeSection } from "../../src/domain/listings/sections";
import { deleteTour, findTour, updateTour } from "../../src/domain/tours";
import { DomainError } from "../../src/lib/errors";
import { deleteEndpoint, findEndpoint } from "../../src/webhooks/endpoints/records";
import { call, db, makeListing, makeTenant, outbox, unique } from "../support/harness";

/** The refusal `work` ends with: its code and details. */
async function refusalOf(work: Promise<unknown>) {
  const err = await work.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(DomainError);
  return { code: (err as DomainError).code, details: (err as DomainError).details };
}

const STALE = { code: "resource_version_mismatch", details: { expected: '"v1"', current: '"v2"' } };

// Each write is handed the row as it was read (version 1) after another change raised the
// version in D1: only the writing statement's own guard can see the difference.
describe("the version check is in the writing statement", () => {
  it("a listing status change or section write read before another change writes nothing", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t, { activate: true });
    const read = await findListing(db(), t.agencyId, listing_number);
    await db()
      .update(listings)
      .set({ address: unique("moved") })
      .where(eq(listings.id, read.id));
    const events = (await outbox(t.agencyId)).length;
    expect(await refusalOf(changeStatus(db(), read, "Active", [], [read.version]))).toEqual({
      ...STALE,
      details: { expected: `"v${read.version}"`, current: `"v${read.version + 1}"` },
    });
    expect(
      await refusalOf(
        writeSection(
          db(),
          read,
          "matterport",
          "set",
          { matterportUrl: "https://my.matterport.com/show/?m=Z" },
          [],
          [read.version],
        ),
      ),
    ).toMatchObject({ code: "resource_version_mismatch" });
    const now = await findListing(db(), t.agencyId, listing_number);
    expect(now.status).toBe(read.status);
    expect(now.matterportUrl).toBeNull();
    expect(now.version).toBe(read.version + 1);
    expect((await outbox(t.agencyId)).length, "no event for a refused write").toBe(events);
    // Without If-Match the same stale read still writes, as before.
    expect((await changeStatus(db(), read, "Active")).version).toBe(read.version + 2);
  });

  it("a tour update or delete read before another change writes nothing", async () => {
    const t = await makeTenant();
    const made = await call("/api/v1/tours", {
      key: t.key,
      body: { address: unique("tour"), city: "Portside", state: "CA", zipcode: "94110" },
    });
    expect(made.status, made.text).toBe(201);
    const read = await findTour(db(), t.agencyId, made.json.tour_number);
    expect(read.version).toBe(1);
    await db().update(tours).set({ bedrooms: 4 }).where(eq(tours.id, read.id));
    expect(await refusalOf(updateTour(db(), read, { price: 1 }, [], [1]))).toEqual(STALE);
    expect(await refusalOf(deleteTour(db(), read, [], [1]))).toEqual(STALE);
    const now = await findTour(db(), t.agencyId, read.tourNumber);
    expect(now).toMatchObject({ version: 2, price: null, bedrooms: 4 });
  });

  it("a webhook endpoint delete read before another change removes nothing", async () => {
    const t = await makeTenant();
    const made = await call("/api/v1/webhooks/endpoints", {
      key: t.key,
      body: { url: `https://hooks.example.com/${unique("guard")}` },
    });
    expect(made.status, made.text).toBe(201);
    const read = await findEndpoint(db(), t.agencyId, made.json.id);
    await db().update(webhookEndpoints).set({ description: "changed" }).where(eq(webhookEndpoints.id, read.id));
    expect(await refusalOf(deleteEndpoint(db(), read, [], [1]))).toEqual(STALE);
    expect((await findEndpoint(db(), t.agencyId, read.id)).version).toBe(2);
  });
});
