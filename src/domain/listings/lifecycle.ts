import { and, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { type Listing, listings } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";
import { outboxInsertIfChanged } from "../events/outbox";
import { checkVersion, type IfVersion, nextVersion, versionAccepted, versionIn, versionMismatch } from "../versions";

export const LISTING_STATUSES = ["Coming Soon", "Active", "Pending", "Sold", "Off Market", "Cancelled"] as const;
export type ListingStatus = (typeof LISTING_STATUSES)[number];
/** Values PATCH …/status accepts: cancelling has its own route and rules. */
export const SETTABLE_STATUSES = LISTING_STATUSES.filter((s) => s !== "Cancelled") as Exclude<
  ListingStatus,
  "Cancelled"
>[];

/** The state table: only an activated listing moves, and only to a different status. */
function checkTransition(listing: Pick<Listing, "isActivated" | "status" | "listingNumber">, next: ListingStatus) {
  if (!listing.isActivated)
    throw new DomainError("listing_not_activated", {
      details: { status: listing.status, listing_number: listing.listingNumber },
    });
  if (listing.status === next) throw new DomainError("no_op_transition", { details: { status: listing.status } });
}

/**
 * Moves an activated listing to another status, guarded on the status it was read with.
 * No status set here is `Cancelled`, so the same UPDATE clears the cancellation a listing
 * moved out of `Cancelled` carried (its time and reason); its events stay as they are.
 * `alsoWrite` follows the event, which is written only when the listing changed, so a
 * statement there conditional on `changes()` runs only for a change that won its race.
 */
export async function changeStatus(
  db: Db,
  listing: Listing,
  next: (typeof SETTABLE_STATUSES)[number],
  alsoWrite: BatchItem<"sqlite">[] = [],
  ifVersion?: IfVersion,
): Promise<Listing> {
  checkVersion(listing.version, ifVersion);
  checkTransition(listing, next);
  const [[updated]] = await db.batch([
    db
      .update(listings)
      .set({
        status: next,
        cancelledAt: null,
        cancellationReason: null,
        updatedAt: nowIso(),
        version: nextVersion(listings.version),
      })
      .where(
        and(
          eq(listings.id, listing.id),
          eq(listings.status, listing.status),
          eq(listings.isActivated, true),
          versionIn(listings.version, ifVersion),
        ),
      )
      .returning(),
    outboxInsertIfChanged(db, listing.agencyId, "listing.status_changed", {
      listing_number: listing.listingNumber,
      status: next,
      previous_status: listing.status,
    }),
    ...alsoWrite,
  ]);
  if (!updated && ifVersion !== undefined) await refuseStale(db, listing.id, ifVersion);
  // Lost a race with another change: answer from the state that won.
  if (!updated)
    throw new DomainError("no_op_transition", {
      message: "The listing changed while this request ran; read it and retry.",
      details: { status: listing.status },
    });
  return updated;
}

/** Activation (credit capture) happens once, in the dashboard. */
export async function activateListing(
  db: Db,
  listing: Listing,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Listing> {
  if (listing.isActivated) return listing;
  const at = nowIso();
  const [[updated]] = await db.batch([
    db
      .update(listings)
      .set({ isActivated: true, activatedAt: at, updatedAt: at, version: nextVersion(listings.version) })
      .where(eq(listings.id, listing.id))
      .returning(),
    ...alsoWrite,
  ]);
  return updated!;
}

/**
 * After a conditional write of a listing changed nothing: 404 when it is gone, 412 when
 * its version is no longer one the write accepted; otherwise the caller's own refusal.
 */
export async function refuseStale(db: Db, id: string, ifVersion: readonly number[]): Promise<void> {
  const row = await db.select({ version: listings.version }).from(listings).where(eq(listings.id, id)).get();
  if (!row) throw new DomainError("listing_not_found");
  if (!versionAccepted(row.version, ifVersion)) throw versionMismatch(ifVersion, row.version);
}
