import { and, asc, eq, isNotNull, isNull } from "drizzle-orm";
import { type Db, database } from "../db/client";
import { appointments, calendarDiscrepancies, listings, tours, users } from "../db/schema";
import { isUniqueViolation } from "../domain/constraint";
import { outboxInsert } from "../domain/outbox";
import { DomainError } from "../lib/errors";
import { newId, nowIso } from "../lib/ids";
import { resolveConnection, sourceFor } from "./connections";
import type { CalendarEvent, CalendarSource } from "./outbound";

export const RECONCILE_CRON = "*/15 * * * *";
/** A start that differs by more than this is "moved". */
const MOVED_TOLERANCE_MS = 60_000;

interface Subject {
  type: "appointment" | "tour";
  id: string;
  agencyId: string;
  calendarEventId: string;
  /** Whose calendar holds it: the listing's first agent, or for tours the agency's owner. */
  userId: string;
  expectedStart: string | null;
}

type Kind = "missing" | "moved" | "malformed";

export function discrepancyOf(subject: Pick<Subject, "expectedStart">, event: CalendarEvent): Kind | null {
  if (!event.found) return "missing";
  if (event.start === null) return "malformed";
  if (
    subject.expectedStart &&
    Math.abs(Date.parse(event.start) - Date.parse(subject.expectedStart)) > MOVED_TOLERANCE_MS
  )
    return "moved";
  return null;
}

/** Which stored calendar events a run checks: every agency's, or one agency's (at most `limit` of each kind). */
export interface ReconcileScope {
  agencyId?: string;
  limit?: number;
}

async function subjects(db: Db, scope: ReconcileScope): Promise<Subject[]> {
  const appts = await db
    .select({
      id: appointments.id,
      agencyId: appointments.agencyId,
      eventId: appointments.calendarEventId,
      startsAt: appointments.startsAt,
      userId: listings.agentOneId,
    })
    .from(appointments)
    .innerJoin(listings, eq(listings.id, appointments.listingId))
    .where(
      and(
        eq(appointments.status, "scheduled"),
        isNotNull(appointments.calendarEventId),
        scope.agencyId ? eq(appointments.agencyId, scope.agencyId) : undefined,
      ),
    )
    .orderBy(asc(appointments.startsAt))
    .limit(scope.limit ?? -1);
  const tourRows = await db
    .select({ id: tours.id, agencyId: tours.agencyId, eventId: tours.calendarEventId })
    .from(tours)
    .where(and(isNotNull(tours.calendarEventId), scope.agencyId ? eq(tours.agencyId, scope.agencyId) : undefined))
    .orderBy(asc(tours.createdAt))
    .limit(scope.limit ?? -1);
  const owners = new Map<string, string>();
  for (const t of tourRows) {
    if (owners.has(t.agencyId)) continue;
    const owner = await db
      .select({ id: users.id })
      .from(users)
      .where(and(eq(users.agencyId, t.agencyId), isNull(users.managerId)))
      .orderBy(asc(users.createdAt))
      .get();
    if (owner) owners.set(t.agencyId, owner.id);
  }
  return [
    ...appts.map((a) => ({
      type: "appointment" as const,
      id: a.id,
      agencyId: a.agencyId,
      calendarEventId: a.eventId!,
      userId: a.userId,
      expectedStart: a.startsAt,
    })),
    ...tourRows
      .filter((t) => owners.has(t.agencyId))
      .map((t) => ({
        type: "tour" as const,
        id: t.id,
        agencyId: t.agencyId,
        calendarEventId: t.eventId!,
        userId: owners.get(t.agencyId)!,
        expectedStart: null,
      })),
  ];
}

/**
 * Checks every stored calendar event against its calendar. A discrepancy emits
 * `appointment.orphan.detected` once, in the same batch as its open record; while it
 * persists nothing more is emitted; when it heals the record is closed, so a later one
 * is reported again. A calendar that cannot be reached is skipped until the next run.
 */
export async function reconcileCalendars(
  env: Env,
  scope: ReconcileScope = {},
): Promise<{ checked: number; detected: number; resolved: number; skipped: number }> {
  const db = database(env.DB);
  const sources = new Map<string, Promise<CalendarSource>>();
  const counts = { checked: 0, detected: 0, resolved: 0, skipped: 0 };
  for (const subject of await subjects(db, scope)) {
    let event: CalendarEvent;
    try {
      const conn = await resolveConnection(db, subject.userId);
      let source = sources.get(conn.id);
      if (!source) {
        source = sourceFor(db, env, conn);
        sources.set(conn.id, source);
      }
      event = await (await source).event(subject.calendarEventId);
    } catch (err) {
      if (!(err instanceof DomainError)) throw err;
      counts.skipped++;
      continue;
    }
    counts.checked++;
    const kind = discrepancyOf(subject, event);
    const open = await db
      .select()
      .from(calendarDiscrepancies)
      .where(
        and(
          eq(calendarDiscrepancies.subjectType, subject.type),
          eq(calendarDiscrepancies.subjectId, subject.id),
          isNull(calendarDiscrepancies.resolvedAt),
        ),
      );
    const healed = open.filter((d) => d.kind !== kind);
    for (const d of healed)
      await db.update(calendarDiscrepancies).set({ resolvedAt: nowIso() }).where(eq(calendarDiscrepancies.id, d.id));
    counts.resolved += healed.length;
    if (!kind || open.some((d) => d.kind === kind)) continue;
    try {
      await db.batch([
        db.insert(calendarDiscrepancies).values({
          id: newId("cdx"),
          agencyId: subject.agencyId,
          subjectType: subject.type,
          subjectId: subject.id,
          kind,
        }),
        outboxInsert(db, subject.agencyId, "appointment.orphan.detected", {
          subject_type: subject.type,
          subject_id: subject.id,
          calendar_event_id: subject.calendarEventId,
          discrepancy: kind,
          expected_starts_at: subject.expectedStart,
          calendar_starts_at: event.found ? event.start : null,
        }),
      ]);
      counts.detected++;
    } catch (err) {
      // Another run recorded the same open discrepancy first.
      if (!isUniqueViolation(err, "calendar_discrepancies")) throw err;
    }
  }
  return counts;
}
