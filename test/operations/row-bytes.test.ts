import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { agencyUsage, idempotencyMarks, webhookDeliveries, webhookDeliveryAttempts } from "../../src/db/schema";
import { outboxInsert } from "../../src/domain/events/outbox";
import { createListing } from "../../src/domain/listings/create";
import { STORED_TABLES } from "../../src/domain/quotas";
import { createTour } from "../../src/domain/tours";
import { db, makeTenant, unique } from "../support/harness";

/** The database's size in bytes, as D1 reports it after a statement. */
const size = async () => (await env.DB.prepare("SELECT 1").run()).meta.size_after;

/** Bytes per item: the growth of the database over `n` writes of it, divided by `n`. */
async function bytesPer(n: number, write: (i: number) => Promise<unknown>): Promise<number> {
  const before = await size();
  for (let i = 0; i < n; i++) await write(i);
  return Math.round(((await size()) - before) / n);
}

const N = 400;

/**
 * What a typical row costs in D1, indexes and triggers' rows included: the figures behind
 * the usage report's estimates and the capacity table in docs/scaling.md.
 */
describe("bytes per row, measured on real writes", () => {
  it("a listing, an event, a delivery with its attempts, a tour with its grams, a commit mark", async () => {
    const t = await makeTenant();
    const d = db();
    // An event alone: a typical listing.status_changed as the outbox writes it.
    const event = await bytesPer(N, (i) =>
      outboxInsert(d, t.agencyId, "listing.status_changed", {
        listing_number: `l${String(i).padStart(6, "0")}`,
        status: "Active",
        previous_status: "Coming Soon",
      }),
    );
    // A listing as created, with its listing.created event (the event's share is taken off below).
    const listingWithEvent = await bytesPer(N, (i) =>
      createListing(d, t.agencyId, "https://example.com", {
        address: `${100 + i} Harbour Street, Portside`,
        ownerUserId: t.owner.id,
        agentOneId: t.agent.id,
        agentTwoId: null,
      }),
    );
    const eventId = unique("evt");
    // A delivered delivery with the usual two attempts (a first that failed, then success).
    const delivery = await bytesPer(N, async (i) => {
      const id = unique("whd");
      await d.batch([
        d.insert(webhookDeliveries).values({
          id,
          eventId: `${eventId}_${i}`,
          endpointId: "we_0mhx3k2a1q8v2l0c9z7rj4",
          agencyId: t.agencyId,
          status: "delivered",
          attempts: 2,
          lastResponseStatus: 200,
          deliveredAt: new Date().toISOString(),
        }),
        d.insert(webhookDeliveryAttempts).values({
          id: unique("wha"),
          deliveryId: id,
          attempt: 1,
          attemptedAt: new Date().toISOString(),
          responseStatus: 503,
          latencyMs: 840,
          error: "receiver answered 503",
        }),
        d.insert(webhookDeliveryAttempts).values({
          id: unique("wha"),
          deliveryId: id,
          attempt: 2,
          attemptedAt: new Date().toISOString(),
          responseStatus: 200,
          latencyMs: 120,
        }),
      ]);
    });
    // A tour with a usual address, a description and five images; its ~30 search grams come with it.
    const tour = await bytesPer(N, (i) =>
      createTour(d, t.agencyId, {
        address: `${200 + i} Lighthouse Road`,
        city: "Portside",
        state: "CA",
        zipcode: "94110",
        description: "Bright three-bedroom home with harbour views. ".repeat(8),
        images: Array.from({ length: 5 }, (_, k) => ({ url: `https://cdn.example.com/t/${i}/${k}.jpg` })),
      }),
    );
    const mark = await bytesPer(N, (i) =>
      d.insert(idempotencyMarks).values({
        agencyId: t.agencyId,
        idemKey: crypto.randomUUID(),
        requestHash: "a".repeat(64),
        status: 201,
        resourceType: "listing",
        resourceId: `lst_${i}`,
        expiresAt: new Date(Date.now() + 86_400_000).toISOString(),
        createdAt: new Date().toISOString(),
        requestId: unique("req"),
        operationId: "createListing",
        method: "POST",
        path: "/api/v1/listings",
        traceParent: `00-${"1".repeat(32)}-${"2".repeat(16)}-01`,
      }),
    );
    const listing = listingWithEvent - event;
    const figures = { listing, event, delivery_with_two_attempts: delivery, tour_with_grams: tour, mark };
    console.log(`bytes per row (D1, ${N} of each): ${JSON.stringify(figures)}`);

    for (const [name, bytes] of Object.entries(figures)) {
      expect(bytes, name).toBeGreaterThan(50);
      expect(bytes, name).toBeLessThan(20_000);
    }
    // The usage report's estimates (fixed part of a row, client-sized bytes apart) stay near what rows cost.
    const near = (estimate: number, measured: number, name: string) => {
      expect(estimate, `${name}: estimate ${estimate}, measured ${measured}`).toBeGreaterThanOrEqual(measured * 0.5);
      expect(estimate, `${name}: estimate ${estimate}, measured ${measured}`).toBeLessThanOrEqual(measured * 2);
    };
    const used = async (resource: string) =>
      (
        await d
          .select({ used: agencyUsage.used })
          .from(agencyUsage)
          .where(and(eq(agencyUsage.agencyId, t.agencyId), eq(agencyUsage.resource, resource)))
          .get()
      )?.used ?? 0;
    const per = async (resource: string) => (await used(resource)) / N;
    near(STORED_TABLES.listings.rowBytes + (await per("listing_bytes")), listing, "listing");
    near(
      STORED_TABLES.tours.rowBytes +
        (await per("tour_bytes")) +
        (await per("tour_search_grams")) * STORED_TABLES.tour_search_grams.rowBytes,
      tour,
      "tour",
    );
    near(STORED_TABLES.events.rowBytes, event, "event");
    near(STORED_TABLES.idempotency_marks.rowBytes, mark, "mark");
    near(
      STORED_TABLES.webhook_deliveries.rowBytes + 2 * STORED_TABLES.webhook_delivery_attempts.rowBytes,
      delivery,
      "delivery",
    );
  });
});
