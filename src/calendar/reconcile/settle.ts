import { and, eq, isNull } from "drizzle-orm";
import type { Db } from "../../db/client";
import { calendarDiscrepancies } from "../../db/schema";
import { isUniqueViolation } from "../../domain/constraint";
import { outboxInsert } from "../../domain/events/outbox";
import { newId, nowIso } from "../../lib/ids";
import type { CalendarEvent } from "../outbound";
import type { Subject } from "./subjects";

/** A start that differs by more than this is "moved". */
const MOVED_TOLERANCE_MS = 60_000;

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

/** Closes the subject's healed discrepancies and opens (and reports) a new one, once. */
export async function settleSubject(
  db: Db,
  subject: Subject,
  event: CalendarEvent,
): Promise<{ resolved: number; detected: boolean }> {
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
  if (!kind || open.some((d) => d.kind === kind)) return { resolved: healed.length, detected: false };
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
    return { resolved: healed.length, detected: true };
  } catch (err) {
    // Another run recorded the same open discrepancy first.
    if (!isUniqueViolation(err, "calendar_discrepancies")) throw err;
    return { resolved: healed.length, detected: false };
  }
}
