import { and, asc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { agencies, appointments, events, type Listing, listings } from "../db/schema";
import { DomainError } from "../lib/errors";
import { newEventId, outboxInsertIfChanged } from "./outbox";

/**
 * The no-fee window closes `cancellation_notice_hours` before the earliest scheduled
 * shoot; with no scheduled shoot it never closes.
 */
async function cancellationCutoff(db: Db, listing: Listing): Promise<Date | null> {
  const [first] = await db
    .select({ startsAt: appointments.startsAt, hours: agencies.cancellationNoticeHours })
    .from(appointments)
    .innerJoin(agencies, eq(agencies.id, appointments.agencyId))
    .where(and(eq(appointments.listingId, listing.id), eq(appointments.status, "scheduled")))
    .orderBy(asc(appointments.startsAt))
    .limit(1);
  return first ? new Date(Date.parse(first.startsAt) - first.hours * 3600_000) : null;
}

/**
 * Cancels a listing and its scheduled appointments in one batch. The API honours the
 * no-fee window; the dashboard may cancel past it. A listing already cancelled emits
 * nothing again, even when two cancellations race. `alsoWrite` follows the listing's
 * event, so a statement there conditional on `changes()` runs only for the winner.
 */
export async function cancelListing(
  db: Db,
  listing: Listing,
  opts: { reason?: string | null; source: "api" | "dashboard"; now?: Date },
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Listing> {
  if (listing.status === "Cancelled")
    throw new DomainError("listing_already_cancelled", { details: { cancelled_at: listing.cancelledAt } });
  const now = opts.now ?? new Date();
  if (opts.source === "api") {
    const cutoff = await cancellationCutoff(db, listing);
    if (cutoff && now >= cutoff)
      throw new DomainError("outside_cancellation_window", { details: { cutoff: cutoff.toISOString() } });
  }
  const scheduled = await db
    .select()
    .from(appointments)
    .where(and(eq(appointments.listingId, listing.id), eq(appointments.status, "scheduled")))
    .all();
  const at = now.toISOString();
  // The shoots are cancelled only by the batch whose listing change won: its event exists.
  const cancelledEvent = newEventId();
  const won = sql`EXISTS (SELECT 1 FROM ${events} WHERE ${events.id} = ${cancelledEvent})`;
  const [[updated]] = await db.batch([
    db
      .update(listings)
      .set({ status: "Cancelled", cancelledAt: at, cancellationReason: opts.reason ?? null, updatedAt: at })
      .where(and(eq(listings.id, listing.id), sql`${listings.status} <> 'Cancelled'`))
      .returning(),
    outboxInsertIfChanged(
      db,
      listing.agencyId,
      "listing.cancelled",
      {
        listing_number: listing.listingNumber,
        status: "Cancelled",
        previous_status: listing.status,
        reason: opts.reason ?? null,
        source: opts.source,
        cancelled_at: at,
      },
      cancelledEvent,
    ),
    ...alsoWrite,
    ...scheduled.flatMap((a) => [
      db
        .update(appointments)
        .set({ status: "cancelled", updatedAt: at })
        .where(and(eq(appointments.id, a.id), eq(appointments.status, "scheduled"), won)),
      outboxInsertIfChanged(db, listing.agencyId, "appointment.cancelled", {
        appointment_id: a.id,
        listing_number: listing.listingNumber,
        starts_at: a.startsAt,
        reason: "listing_cancelled",
      }),
    ]),
  ]);
  if (!updated) throw new DomainError("listing_already_cancelled");
  return updated;
}
