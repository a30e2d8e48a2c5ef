import { and, asc, eq, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "../../db/client";
import { keysetPage, type Page, type PageRequest } from "../../db/pages";
import { type Listing, listings } from "../../db/schema";
import { decodeCursor, encodeCursor } from "../../lib/cursor";
import { DomainError } from "../../lib/errors";
import type { ListingStatus } from "./lifecycle";

const LISTING_NUMBER = /^[a-z0-9]{7}$/;

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

/** The version of the agency's listing with this number, or undefined: one indexed read of one column. */
export async function listingVersion(db: Db, agencyId: string, listingNumber: string): Promise<number | undefined> {
  if (!LISTING_NUMBER.test(listingNumber)) return undefined;
  const row = await db
    .select({ version: listings.version })
    .from(listings)
    .where(and(eq(listings.agencyId, agencyId), eq(listings.listingNumber, listingNumber)))
    .get();
  return row?.version;
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
  const at = await decodeCursor(req.keyring, list, req.cursor);
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
  return { rows: page, nextCursor: more && last ? await encodeCursor(req.keyring, list, last) : "" };
}

/** A listing by its internal id, held to the agency; undefined when it is not the agency's. */
export async function listingById(db: Db, agencyId: string, id: string): Promise<Listing | undefined> {
  return db
    .select()
    .from(listings)
    .where(and(eq(listings.id, id), eq(listings.agencyId, agencyId)))
    .get();
}
