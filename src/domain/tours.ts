import { and, count, desc, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { type Tour, tourCounts, tourSearchGramCounts, tourSearchGrams, tours } from "../db/schema";
import { DomainError } from "../lib/errors";
import { newId, nowIso, randomAlnum } from "../lib/ids";
import { isUniqueViolation } from "./constraint";
import { quotaRefusal } from "./quotas";
import { checkVersion, type IfVersion, nextVersion, versionAccepted, versionIn, versionMismatch } from "./versions";

export const TOUR_STATUSES = ["active", "inactive", "archived"] as const;
type TourStatus = (typeof TOUR_STATUSES)[number];
const TOUR_NUMBER = /^[a-z0-9]{8}$/;

export interface TourInput {
  address: string;
  city: string;
  state: string;
  zipcode: string;
  mlsNumber?: string | null;
  price?: number | null;
  bedrooms?: number | null;
  bathrooms?: number | null;
  sqft?: number | null;
  description?: string | null;
  images?: { url: string; caption?: string }[];
  virtualTourUrl?: string | null;
}

export async function findTour(db: Db, agencyId: string, tourNumber: string): Promise<Tour> {
  const tour = TOUR_NUMBER.test(tourNumber)
    ? await db
        .select()
        .from(tours)
        .where(and(eq(tours.agencyId, agencyId), eq(tours.tourNumber, tourNumber)))
        .get()
    : undefined;
  if (!tour) throw new DomainError("tour_not_found");
  return tour;
}

/** A tour by its internal id, held to the agency; undefined when it is not the agency's. */
export async function tourById(db: Db, agencyId: string, id: string): Promise<Tour | undefined> {
  return db
    .select()
    .from(tours)
    .where(and(eq(tours.id, id), eq(tours.agencyId, agencyId)))
    .get();
}

/** The version of the agency's tour with this number, or undefined: one indexed read of one column. */
export async function tourVersion(db: Db, agencyId: string, tourNumber: string): Promise<number | undefined> {
  const row = await db
    .select({ version: tours.version })
    .from(tours)
    .where(and(eq(tours.agencyId, agencyId), eq(tours.tourNumber, tourNumber)))
    .get();
  return row?.version;
}

/** Tour numbers are 8 characters of [a-z0-9], minted by the server and unique per agency. */
export async function createTour(
  db: Db,
  agencyId: string,
  input: TourInput,
  alsoWrite: (tour: { id: string }) => BatchItem<"sqlite">[] = () => [],
): Promise<Tour> {
  for (let attempt = 0; ; attempt++) {
    const id = newId("tour");
    try {
      const [[tour]] = await db.batch([
        db
          .insert(tours)
          .values({ id, agencyId, tourNumber: randomAlnum(8), ...input, images: input.images ?? [] })
          .returning(),
        ...alsoWrite({ id }),
      ]);
      return tour!;
    } catch (err) {
      if (!isUniqueViolation(err, "tours.")) return quotaRefusal(db, agencyId, err);
      if (attempt >= 5) throw err;
    }
  }
}

/**
 * `alsoWrite` follows the guarded UPDATE: a statement there conditional on `changes()`
 * runs only if it changed the tour.
 */
export type TourPatch = { status?: TourStatus; price?: number | null; description?: string | null };

/** True when every field the patch sends already holds that value: such an update changes nothing. */
export const leavesTourUnchanged = (tour: Tour, patch: TourPatch): boolean =>
  (patch.status === undefined || patch.status === tour.status) &&
  (patch.price === undefined || patch.price === tour.price) &&
  (patch.description === undefined || patch.description === tour.description);

export async function updateTour(
  db: Db,
  tour: Tour,
  patch: TourPatch,
  alsoWrite: BatchItem<"sqlite">[] = [],
  ifVersion?: IfVersion,
): Promise<Tour> {
  checkVersion(tour.version, ifVersion);
  const [[updated]] = await db
    .batch([
      db
        .update(tours)
        .set({ ...patch, updatedAt: nowIso(), version: nextVersion(tours.version) })
        .where(and(eq(tours.id, tour.id), eq(tours.agencyId, tour.agencyId), versionIn(tours.version, ifVersion)))
        .returning(),
      ...alsoWrite,
    ])
    .catch((err: unknown) => quotaRefusal(db, tour.agencyId, err));
  if (!updated && ifVersion !== undefined) await refuseStaleTour(db, tour, ifVersion);
  if (!updated) throw new DomainError("tour_not_found");
  return updated;
}

/**
 * Deletes a tour; one deleted meanwhile (a concurrent delete) is `tour_not_found`, as it
 * would be a moment later. `alsoWrite` follows the DELETE, like `updateTour`'s.
 */
export async function deleteTour(
  db: Db,
  tour: Tour,
  alsoWrite: BatchItem<"sqlite">[] = [],
  ifVersion?: IfVersion,
): Promise<void> {
  checkVersion(tour.version, ifVersion);
  const [deleted] = await db.batch([
    db
      .delete(tours)
      .where(and(eq(tours.id, tour.id), eq(tours.agencyId, tour.agencyId), versionIn(tours.version, ifVersion)))
      .returning({ id: tours.id }),
    ...alsoWrite,
  ]);
  if (!deleted.length && ifVersion !== undefined) await refuseStaleTour(db, tour, ifVersion);
  if (!deleted.length) throw new DomainError("tour_not_found");
}

/** After a conditional write of a tour changed nothing: 412 while the tour exists with another version. */
async function refuseStaleTour(db: Db, tour: Tour, ifVersion: readonly number[]): Promise<void> {
  const row = await db
    .select({ version: tours.version })
    .from(tours)
    .where(and(eq(tours.id, tour.id), eq(tours.agencyId, tour.agencyId)))
    .get();
  if (row && !versionAccepted(row.version, ifVersion)) throw versionMismatch(ifVersion, row.version);
}

/** The longest `search` term, in characters. */
export const MAX_TOUR_SEARCH = 100;
/** The shortest `search` term, in characters: a term reads the postings of its rarest trigram. */
export const MIN_TOUR_SEARCH = 3;
/** The deepest row a numbered page reaches (`page` × `limit`); deeper pages would skip ever more rows. */
export const MAX_TOUR_PAGE_DEPTH = 10_000;

/**
 * The tours whose address holds `term`, as a subquery of tour ids: a superset, to be checked
 * with `addressHolds`. Positions come from the `tour_search_grams` index (the up-to-3
 * characters at each position of lower(address)), so only postings are read, never every
 * tour of the agency. A term (at least `MIN_TOUR_SEARCH` characters) reads the postings of
 * its rarest trigram (every match holds all of them).
 */
function searchCandidates(agencyId: string, term: string): SQL {
  const g = tourSearchGrams;
  // Addresses holding a NUL (indexed only up to it) are under the gram '' and always checked.
  const withNul = sql`SELECT ${g.tourId} FROM ${g} WHERE ${g.agencyId} = ${agencyId} AND ${g.gram} = ''`;
  if (term.includes("\0")) return withNul;
  return sql`${gramCandidates(agencyId, term)} UNION ALL ${withNul}`;
}

function gramCandidates(agencyId: string, term: string): SQL {
  const g = tourSearchGrams;
  const c = tourSearchGramCounts;
  // The term's distinct trigrams, each position of lower(term) a json_each key.
  const termGrams = sql`SELECT DISTINCT substr(lower(${term}), p.key + 1, 3) AS gram
    FROM json_each('[' || replace(hex(zeroblob(length(${term}) - 2)), '00', '0,') || '0]') AS p
    WHERE p.key < length(${term}) - 2`;
  const rarest = sql`SELECT t.gram FROM (${termGrams}) AS t
    LEFT JOIN ${c} ON ${c.agencyId} = ${agencyId} AND ${c.gram} = t.gram
    ORDER BY coalesce(${c.tours}, 0) LIMIT 1`;
  return sql`SELECT ${g.tourId} FROM ${g} WHERE ${g.agencyId} = ${agencyId} AND ${g.gram} = (${rarest})`;
}

/**
 * A numbered page of an agency's tours, newest first, optionally by status and address.
 * Reads stay proportional to the page (and to the matches, for a search), not to the
 * agency: the page's ids come from a covering index, the total from `tour_counts`.
 */
export async function pageTours(
  db: Db,
  agencyId: string,
  q: { page: number; limit: number; status?: string; search?: string },
) {
  if (q.page * q.limit > MAX_TOUR_PAGE_DEPTH) {
    const message = `page × limit must be at most ${MAX_TOUR_PAGE_DEPTH}; narrow the list with status or search.`;
    throw new DomainError("request_query_invalid", {
      message: `Invalid query parameter. page: ${message}`,
      details: {
        errors: [{ field: "page", code: "validation_out_of_range", message, ctx: { maximum: MAX_TOUR_PAGE_DEPTH } }],
        fields: { page: [message] },
      },
    });
  }
  const newestFirst = [desc(tours.createdAt), desc(tours.id)];
  const offset = (q.page - 1) * q.limit;
  if (q.search) {
    // instr, not LIKE: the term is matched literally (% and _ are plain characters), and
    // D1's 50-byte cap on LIKE patterns does not apply. ASCII case folding, as NOCASE.
    // The unary + keeps SQLite on the candidates' primary key instead of the agency index.
    const where = and(
      sql`${tours.id} IN (${searchCandidates(agencyId, q.search)})`,
      sql`+${tours.agencyId} = ${agencyId}`,
      q.status ? sql`+${tours.status} = ${q.status}` : undefined,
      sql`instr(lower(${tours.address}), lower(${q.search})) > 0`,
    );
    const [rows, [total]] = await Promise.all([
      db
        .select()
        .from(tours)
        .where(where)
        .orderBy(...newestFirst)
        .limit(q.limit)
        .offset(offset),
      db.select({ n: count() }).from(tours).where(where),
    ]);
    return { rows, total: total?.n ?? 0 };
  }
  const filter = and(eq(tours.agencyId, agencyId), q.status ? eq(tours.status, q.status) : undefined);
  // The page's ids are skipped to on the (agency[, status], created_at, id) index alone;
  // only the page's own rows are read.
  const pageIds = db
    .select({ id: tours.id })
    .from(tours)
    .where(filter)
    .orderBy(...newestFirst)
    .limit(q.limit)
    .offset(offset);
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(tours)
      .where(inArray(tours.id, pageIds))
      .orderBy(...newestFirst),
    db
      .select({ n: sql<number>`coalesce(sum(${tourCounts.tours}), 0)` })
      .from(tourCounts)
      .where(and(eq(tourCounts.agencyId, agencyId), q.status ? eq(tourCounts.status, q.status) : undefined)),
  ]);
  return { rows, total: Number(total?.n ?? 0) };
}
