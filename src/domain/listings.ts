import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { keysetPage, type Page, type PageRequest } from "../db/pages";
import { agencies, appointments, events, type Listing, listings, users } from "../db/schema";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import { DomainError } from "../lib/errors";
import { newId, nowIso, randomAlnum } from "../lib/ids";
import { isNotNullViolation, isUniqueViolation } from "./constraint";
import { newEventId, outboxInsert, outboxInsertIfChanged } from "./outbox";

export const LISTING_STATUSES = ["Coming Soon", "Active", "Pending", "Sold", "Off Market", "Cancelled"] as const;
export type ListingStatus = (typeof LISTING_STATUSES)[number];
/** Values PATCH …/status accepts: cancelling has its own route and rules. */
export const SETTABLE_STATUSES = LISTING_STATUSES.filter((s) => s !== "Cancelled") as Exclude<
  ListingStatus,
  "Cancelled"
>[];
export const LISTING_NUMBER = /^[a-z0-9]{7}$/;

export const publicUrl = (siteUrl: string, listingNumber: string) =>
  `${siteUrl.replace(/\/$/, "")}/property/${listingNumber}`;

export async function findListing(db: Db, agencyId: string, listingNumber: string): Promise<Listing> {
  const listing = LISTING_NUMBER.test(listingNumber)
    ? await db
        .select()
        .from(listings)
        .where(and(eq(listings.agencyId, agencyId), eq(listings.listingNumber, listingNumber)))
        .get()
    : undefined;
  if (!listing) throw new DomainError("listing_not_found");
  return listing;
}

/** The agency's listings, oldest first, optionally by status and by a person on them. */
export async function pageListings(
  db: Db,
  agencyId: string,
  filters: { status?: ListingStatus; personId?: string },
  req: PageRequest,
): Promise<Page<Listing>> {
  const { status, personId } = filters;
  const list = `listings:${agencyId}:${status ?? ""}:${personId ?? ""}`;
  const byStatus = status ? eq(listings.status, status) : undefined;
  if (!personId) return keysetPage(db, listings, list, and(eq(listings.agencyId, agencyId), byStatus), req);
  // A person is on a listing as its owner or either agent. One arm per role, each on its
  // (agency, role column, created_at, id) index from the cursor on and cut at the page
  // size, so at most three pages of ids are read however many listings the person has;
  // the union is then ordered and cut once more.
  const at = await decodeCursor(req.secret, list, req.cursor);
  const after = at ? sql`(${listings.createdAt}, ${listings.id}) > (${at.createdAt}, ${at.id})` : undefined;
  const arm = (column: SQLiteColumn) =>
    sql`SELECT * FROM (${db
      .select({ id: listings.id })
      .from(listings)
      .where(and(eq(listings.agencyId, agencyId), eq(column, personId), byStatus, after))
      .orderBy(asc(listings.createdAt), asc(listings.id))
      .limit(req.limit + 1)})`;
  const ids = sql`${arm(listings.ownerUserId)} UNION ${arm(listings.agentOneId)} UNION ${arm(listings.agentTwoId)}`;
  const rows = await db
    .select()
    .from(listings)
    .where(and(sql`${listings.id} IN (${ids})`, sql`+${listings.agencyId} = ${agencyId}`))
    .orderBy(asc(listings.createdAt), asc(listings.id))
    .limit(req.limit + 1);
  const more = rows.length > req.limit;
  const page = more ? rows.slice(0, req.limit) : rows;
  const last = page[page.length - 1];
  return { rows: page, nextCursor: more && last ? await encodeCursor(req.secret, list, last) : "" };
}

/** A listing by its internal id, held to the agency; undefined when it is not the agency's. */
export async function listingById(db: Db, agencyId: string, id: string): Promise<Listing | undefined> {
  return db
    .select()
    .from(listings)
    .where(and(eq(listings.id, id), eq(listings.agencyId, agencyId)))
    .get();
}

type People = Record<string, string | null | undefined>;

/** The distinct user ids a request names, without the fields it left out. */
const namedIds = (people: People) => [...new Set(Object.values(people).filter((v): v is string => !!v))];

/** Owner and agents must be users of the calling agency's hierarchy. */
async function checkPeople(db: Db, agencyId: string, people: People) {
  const ids = namedIds(people);
  const found = ids.length
    ? await db
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.agencyId, agencyId), inArray(users.id, ids)))
        .all()
    : [];
  const known = new Set(found.map((u) => u.id));
  const outside = Object.entries(people).filter(([, id]) => id && !known.has(id));
  if (outside.length) {
    throw new DomainError("agent_not_in_hierarchy", {
      message: `${outside.map(([field]) => field).join(", ")} must be a user of your agency hierarchy.`,
      details: { fields: outside.map(([field]) => field) },
    });
  }
}

export interface CreateListingInput {
  address: string;
  ownerUserId: string;
  agentOneId: string;
  agentTwoId?: string | null;
  listingNumber?: string;
}

/**
 * The listing's agency, bound only when every named person is a user of it; otherwise
 * NULL, so the insert fails its NOT NULL and the whole batch (event and mark with it)
 * rolls back. The check and the write are one statement: nobody can leave the agency
 * between them, and the create costs one D1 round trip.
 */
function agencyOfPeople(agencyId: string, people: People) {
  const ids = namedIds(people);
  const inAgency = sql`(SELECT count(*) FROM ${users} WHERE ${users.agencyId} = ${agencyId} AND ${users.id} IN ${ids})`;
  return sql`(CASE WHEN ${inAgency} = ${ids.length} THEN ${agencyId} END)`;
}

/**
 * Creates a listing in `Coming Soon`, not activated, with its `listing.created` event in
 * the same batch. A server-minted number that collides is drawn again; a requested one
 * that exists is `listing_number_taken` (the unique index decides, not a prior read).
 * A person outside the agency fails the insert itself (see `agencyOfPeople`); only then
 * is the agency read, to name the fields.
 */
export async function createListing(
  db: Db,
  agencyId: string,
  siteUrl: string,
  input: CreateListingInput,
  alsoWrite: (listing: { id: string }) => BatchItem<"sqlite">[] = () => [],
): Promise<Listing> {
  const people = {
    owner_user_id: input.ownerUserId,
    agent_one_id: input.agentOneId,
    agent_two_id: input.agentTwoId,
  };
  const agency = agencyOfPeople(agencyId, people);
  for (let attempt = 0; ; attempt++) {
    const listingNumber = input.listingNumber ?? randomAlnum(7);
    const id = newId("lst");
    const createdAt = nowIso();
    const row = {
      id,
      agencyId: agency,
      listingNumber,
      address: input.address,
      ownerUserId: input.ownerUserId,
      agentOneId: input.agentOneId,
      agentTwoId: input.agentTwoId ?? null,
      createdAt,
      updatedAt: createdAt,
    };
    try {
      const [[listing]] = await db.batch([
        db.insert(listings).values(row).returning(),
        outboxInsert(db, agencyId, "listing.created", {
          listing_number: listingNumber,
          status: "Coming Soon",
          address: input.address,
          public_url: publicUrl(siteUrl, listingNumber),
          created_at: createdAt,
        }),
        ...alsoWrite({ id }),
      ]);
      return listing!;
    } catch (err) {
      if (isNotNullViolation(err, "listings.agency_id")) {
        // Throws for the people outside; when they have all joined since, the insert is tried again.
        await checkPeople(db, agencyId, people);
        if (attempt >= 5) throw err;
        continue;
      }
      if (!isUniqueViolation(err, "listings.")) throw err;
      if (input.listingNumber)
        throw new DomainError("listing_number_taken", { details: { listing_number: input.listingNumber } });
      if (attempt >= 5) throw err;
    }
  }
}

/** The state table: only an activated listing moves, and only to a different status. */
export function checkTransition(listing: Pick<Listing, "isActivated" | "status">, next: ListingStatus) {
  if (!listing.isActivated) throw new DomainError("listing_not_activated", { details: { status: listing.status } });
  if (listing.status === next) throw new DomainError("no_op_transition", { details: { status: listing.status } });
}

/**
 * Moves an activated listing to another status, guarded on the status it was read with.
 * `alsoWrite` follows the event, which is written only when the listing changed, so a
 * statement there conditional on `changes()` runs only for a change that won its race.
 */
export async function changeStatus(
  db: Db,
  listing: Listing,
  next: ListingStatus,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Listing> {
  checkTransition(listing, next);
  const [[updated]] = await db.batch([
    db
      .update(listings)
      .set({ status: next, updatedAt: nowIso() })
      .where(and(eq(listings.id, listing.id), eq(listings.status, listing.status), eq(listings.isActivated, true)))
      .returning(),
    outboxInsertIfChanged(db, listing.agencyId, "listing.status_changed", {
      listing_number: listing.listingNumber,
      status: next,
      previous_status: listing.status,
    }),
    ...alsoWrite,
  ]);
  // Lost a race with another change: answer from the state that won.
  if (!updated)
    throw new DomainError("no_op_transition", {
      message: "The listing changed while this request ran; read it and retry.",
      details: { status: listing.status },
    });
  return updated;
}

/**
 * The no-fee window closes `cancellation_notice_hours` before the earliest scheduled
 * shoot; with no scheduled shoot it never closes.
 */
export async function cancellationCutoff(db: Db, listing: Listing): Promise<Date | null> {
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
      .set({ isActivated: true, activatedAt: at, updatedAt: at })
      .where(eq(listings.id, listing.id))
      .returning(),
    ...alsoWrite,
  ]);
  return updated!;
}

export interface ListingEdit {
  address?: string;
  ownerUserId?: string;
  agentOneId?: string;
  agentTwoId?: string | null;
}

/** Dashboard edits of listing metadata; `listing.updated` names the fields that changed. */
export async function editListing(
  db: Db,
  listing: Listing,
  edit: ListingEdit,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Listing> {
  await checkPeople(db, listing.agencyId, {
    owner_user_id: edit.ownerUserId,
    agent_one_id: edit.agentOneId,
    agent_two_id: edit.agentTwoId,
  });
  const columns: Record<keyof ListingEdit, string> = {
    address: "address",
    ownerUserId: "owner_user_id",
    agentOneId: "agent_one_id",
    agentTwoId: "agent_two_id",
  };
  const changed = (Object.keys(columns) as (keyof ListingEdit)[]).filter(
    (k) => edit[k] !== undefined && edit[k] !== listing[k],
  );
  if (!changed.length) return listing;
  const next = { ...listing, ...Object.fromEntries(changed.map((k) => [k, edit[k]])) } as Listing;
  const [[updated]] = await db.batch([
    db
      .update(listings)
      .set({ ...Object.fromEntries(changed.map((k) => [k, edit[k]])), updatedAt: nowIso() })
      .where(eq(listings.id, listing.id))
      .returning(),
    outboxInsert(db, listing.agencyId, "listing.updated", {
      listing_number: listing.listingNumber,
      changed_fields: changed.map((k) => columns[k]),
      address: next.address,
      owner_user_id: next.ownerUserId,
      agent_one_id: next.agentOneId,
      agent_two_id: next.agentTwoId,
    }),
    ...alsoWrite,
  ]);
  return updated!;
}
