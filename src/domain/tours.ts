import { and, count, desc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { type Tour, tours } from "../db/schema";
import { DomainError } from "../lib/errors";
import { newId, nowIso, randomAlnum } from "../lib/ids";
import { isUniqueViolation } from "./constraint";

export const TOUR_STATUSES = ["active", "inactive", "archived"] as const;
export type TourStatus = (typeof TOUR_STATUSES)[number];
export const TOUR_NUMBER = /^[a-z0-9]{8}$/;

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
      if (!isUniqueViolation(err, "tours.") || attempt >= 5) throw err;
    }
  }
}

export async function updateTour(
  db: Db,
  tour: Tour,
  patch: { status?: TourStatus; price?: number | null; description?: string | null },
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Tour> {
  const [[updated]] = await db.batch([
    db
      .update(tours)
      .set({ ...patch, updatedAt: nowIso() })
      .where(and(eq(tours.id, tour.id), eq(tours.agencyId, tour.agencyId)))
      .returning(),
    ...alsoWrite,
  ]);
  if (!updated) throw new DomainError("tour_not_found");
  return updated;
}

export async function deleteTour(db: Db, tour: Tour, alsoWrite: BatchItem<"sqlite">[] = []): Promise<void> {
  await db.batch([db.delete(tours).where(and(eq(tours.id, tour.id), eq(tours.agencyId, tour.agencyId))), ...alsoWrite]);
}

/** A numbered page of an agency's tours, newest first, optionally by status and address. */
export async function pageTours(
  db: Db,
  agencyId: string,
  q: { page: number; limit: number; status?: string; search?: string },
) {
  const where = and(
    eq(tours.agencyId, agencyId),
    q.status ? eq(tours.status, q.status) : undefined,
    // A substring test, not LIKE: D1 refuses LIKE patterns above 50 bytes, and a search may be longer.
    q.search ? sql`instr(lower(${tours.address}), lower(${q.search})) > 0` : undefined,
  );
  const [rows, [total]] = await Promise.all([
    db
      .select()
      .from(tours)
      .where(where)
      .orderBy(desc(tours.createdAt), desc(tours.id))
      .limit(q.limit)
      .offset((q.page - 1) * q.limit),
    db.select({ n: count() }).from(tours).where(where),
  ]);
  return { rows, total: total?.n ?? 0 };
}
