import { and, asc, eq, gt, isNotNull, isNull, lt, lte, type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { agencies, appointments, listings, tours } from "../../db/schema";

/** A stored calendar event reconciliation checks. */
export interface Subject {
  type: "appointment" | "tour";
  id: string;
  agencyId: string;
  calendarEventId: string;
  /** Whose calendar holds it: the listing's first agent, or for tours the agency's owner (null: none). */
  userId: string | null;
  expectedStart: string | null;
}

export type Position = { type: Subject["type"]; id: string } | null;

/** The shoots a run checks: those overlapping [from, to). Without one, every open shoot. */
export interface Window {
  from: string;
  to: string;
}

export const encodePosition = (p: Position) => (p ? `${p.type}:${p.id}` : null);

export function decodePosition(value: string | null | undefined): Position {
  const at = value?.indexOf(":") ?? -1;
  if (!value || at < 0) return null;
  const type = value.slice(0, at);
  return type === "appointment" || type === "tour" ? { type, id: value.slice(at + 1) } : null;
}

/** An agency's open shoots on a calendar (not cancelled, not closed), inside the window when there is one. */
function openShoots(agencyId: string | typeof agencies.id, window?: Window) {
  return and(
    eq(appointments.agencyId, agencyId),
    eq(appointments.status, "scheduled"),
    isNull(appointments.closedAt),
    isNotNull(appointments.calendarEventId),
    window ? gt(appointments.endsAt, window.from) : undefined,
    window ? lt(appointments.startsAt, window.to) : undefined,
  );
}

/**
 * The next `limit` subjects of one agency after `after`, in one fixed order (its shoots by
 * id, then its tours by id), and whether its list ended within them.
 */
export async function subjectsAfter(
  db: Db,
  agencyId: string,
  after: Position,
  limit: number,
  ownerOf: (agencyId: string) => Promise<string | null>,
  window?: Window,
): Promise<{ subjects: Subject[]; ended: boolean }> {
  const found: Subject[] = [];
  if (after?.type !== "tour") {
    const appts = await db
      .select({
        id: appointments.id,
        eventId: appointments.calendarEventId,
        startsAt: appointments.startsAt,
        userId: listings.agentOneId,
      })
      .from(appointments)
      .innerJoin(listings, eq(listings.id, appointments.listingId))
      .where(and(openShoots(agencyId, window), after ? gt(appointments.id, after.id) : undefined))
      .orderBy(asc(appointments.id))
      .limit(limit);
    for (const a of appts)
      found.push({
        type: "appointment",
        id: a.id,
        agencyId,
        calendarEventId: a.eventId!,
        userId: a.userId,
        expectedStart: a.startsAt,
      });
  }
  if (found.length < limit) {
    const tourRows = await db
      .select({ id: tours.id, eventId: tours.calendarEventId })
      .from(tours)
      .where(
        and(
          eq(tours.agencyId, agencyId),
          isNotNull(tours.calendarEventId),
          after?.type === "tour" ? gt(tours.id, after.id) : undefined,
        ),
      )
      .orderBy(asc(tours.id))
      .limit(limit - found.length);
    const owner = tourRows.length ? await ownerOf(agencyId) : null;
    for (const t of tourRows)
      found.push({
        type: "tour",
        id: t.id,
        agencyId,
        calendarEventId: t.eventId!,
        userId: owner,
        expectedStart: null,
      });
  }
  return { subjects: found, ended: found.length < limit };
}

/** Agencies with something to check, by id, in the given id range. */
function agenciesWithSubjects(db: Db, range: SQL | undefined, window: Window, limit: number) {
  const hasShoots = db.select({ one: sql`1` }).from(appointments).where(openShoots(agencies.id, window));
  const hasTours = db
    .select({ one: sql`1` })
    .from(tours)
    .where(and(eq(tours.agencyId, agencies.id), isNotNull(tours.calendarEventId)));
  return db
    .select({ id: agencies.id })
    .from(agencies)
    .where(and(range, sql`(EXISTS ${hasShoots} OR EXISTS ${hasTours})`))
    .orderBy(asc(agencies.id))
    .limit(limit);
}

/**
 * The agencies whose turn it is: up to `limit` with something to check, in id order after
 * `after`, wrapping around to the first ones when the list ends. Two statements at most.
 */
export async function agenciesInTurn(db: Db, after: string | null, window: Window, limit: number): Promise<string[]> {
  const next = await agenciesWithSubjects(db, after ? gt(agencies.id, after) : undefined, window, limit);
  const ids = next.map((a) => a.id);
  if (ids.length < limit && after) {
    const wrapped = await agenciesWithSubjects(db, lte(agencies.id, after), window, limit - ids.length);
    ids.push(...wrapped.map((a) => a.id));
  }
  return ids;
}
