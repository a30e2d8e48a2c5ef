import { and, asc, eq, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { agencies, appointments, events, type Listing, listings } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { newEventId, outboxInsertIfChanged } from "../events/outbox";
import { nextVersion } from "../versions";

/** Rounds a cancel runs when shoots keep changing between its reads and its write. */
const CANCEL_ROUNDS = 3;

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
 * The condition the listing's UPDATE holds, so the decision is taken again where the write
 * happens: every scheduled shoot of the listing is one the cancel read (and cancels), and,
 * for the API, none is inside the no-fee window at `now`. A shoot booked or moved since the
 * reads makes the UPDATE change nothing.
 */
function shootsAsRead(listing: Listing, readIds: string[], source: "api" | "dashboard", now: Date): SQL {
  const startsMs = sql`round((julianday(a.starts_at) - 2440587.5) * 86400000)`;
  const notice = sql`(SELECT g.cancellation_notice_hours FROM ${agencies} g WHERE g.id = a.agency_id) * 3600000`;
  const insideWindow = source === "api" ? sql` OR ${startsMs} - ${notice} <= ${now.getTime()}` : sql``;
  return sql`NOT EXISTS (SELECT 1 FROM ${appointments} a
    WHERE a.listing_id = ${listing.id} AND a.status = 'scheduled'
      AND (a.id NOT IN (SELECT value FROM json_each(${JSON.stringify(readIds)}))${insideWindow}))`;
}

/**
 * Cancels a listing and its scheduled appointments in one batch. The API honours the
 * no-fee window; the dashboard may cancel past it. A listing already cancelled emits
 * nothing again, even when two cancellations race. `alsoWrite` follows the listing's
 * event, so a statement there conditional on `changes()` runs only for the winner.
 * The window and the shoots are checked again in the listing's UPDATE: a shoot booked
 * meanwhile either closes the window (`outside_cancellation_window`) or is cancelled too.
 */
export async function cancelListing(
  db: Db,
  listing: Listing,
  opts: { reason?: string | null; source: "api" | "dashboard"; now?: Date },
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Listing> {
  for (let round = 1, current = listing; ; round++) {
    const cancelled = await cancelOnce(db, current, opts, alsoWrite);
    if (cancelled) return cancelled;
    // The UPDATE changed nothing: another cancel won, or the shoots changed since the reads.
    const fresh = await db
      .select()
      .from(listings)
      .where(and(eq(listings.id, listing.id), eq(listings.agencyId, listing.agencyId)))
      .get();
    if (!fresh || fresh.status === "Cancelled") throw new DomainError("listing_already_cancelled");
    if (round === CANCEL_ROUNDS) throw new DomainError("service_unavailable", { retryAfter: 1 });
    current = fresh;
  }
}

/** One read-then-write round of `cancelListing`; undefined when its guarded UPDATE changed nothing. */
async function cancelOnce(
  db: Db,
  listing: Listing,
  opts: { reason?: string | null; source: "api" | "dashboard"; now?: Date },
  alsoWrite: BatchItem<"sqlite">[],
): Promise<Listing | undefined> {
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
      .set({
        status: "Cancelled",
        cancelledAt: at,
        cancellationReason: opts.reason ?? null,
        updatedAt: at,
        version: nextVersion(listings.version),
      })
      .where(
        and(
          eq(listings.id, listing.id),
          eq(listings.agencyId, listing.agencyId),
          sql`${listings.status} <> 'Cancelled'`,
          shootsAsRead(
            listing,
            scheduled.map((a) => a.id),
            opts.source,
            now,
          ),
        ),
      )
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
  return updated;
}
