import { and, asc, eq, gt, isNotNull, isNull } from "drizzle-orm";
import { type Db, database } from "../db/client";
import {
  appointments,
  type CalendarConnection,
  calendarConnections,
  calendarDiscrepancies,
  jobCursors,
  listings,
  tours,
} from "../db/schema";
import { isUniqueViolation } from "../domain/constraint";
import { outboxInsert } from "../domain/outbox";
import { DomainError } from "../lib/errors";
import { newId, nowIso } from "../lib/ids";
import { log } from "../lib/log";
import type { CalendarEvent } from "./outbound";
import { metered } from "./query-meter";
import { reconcileCaches } from "./reconcile-caches";

export const RECONCILE_CRON = "*/15 * * * *";
export const RECONCILE_JOB = "calendar_reconciliation";
/** A start that differs by more than this is "moved". */
const MOVED_TOLERANCE_MS = 60_000;
/**
 * Stored events checked per run. Each costs at most two outbound fetches (its event, and
 * the token refresh or feed download of its connection, made once per run), so a run
 * makes at most 100 subrequests.
 */
export const SUBJECTS_PER_RUN = 50;
/**
 * D1 queries a run may spend before it starts no further subject: under the 1,000 per
 * invocation, with room for the subject in progress and the outbox drain that follows.
 */
const QUERY_BUDGET = 600;
/** A run starts no further subject after this long, well inside a cron's 15 minutes. */
const RUN_DEADLINE_MS = 5 * 60_000;

interface Subject {
  type: "appointment" | "tour";
  id: string;
  agencyId: string;
  calendarEventId: string;
  /** Whose calendar holds it: the listing's first agent, or for tours the agency's owner (null: none). */
  userId: string | null;
  expectedStart: string | null;
}

type Kind = "missing" | "moved" | "malformed";
type Position = { type: Subject["type"]; id: string } | null;

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

const encodePosition = (p: Position) => (p ? `${p.type}:${p.id}` : null);
function decodePosition(value: string | null | undefined): Position {
  const at = value?.indexOf(":") ?? -1;
  if (!value || at < 0) return null;
  const type = value.slice(0, at);
  return type === "appointment" || type === "tour" ? { type, id: value.slice(at + 1) } : null;
}

/**
 * The next `limit` subjects after `after`, in one fixed order (appointments by id, then
 * tours by id), and whether the list ended within them.
 */
async function subjectsAfter(
  db: Db,
  after: Position,
  limit: number,
  ownerOf: (agencyId: string) => Promise<string | null>,
  agencyId?: string,
): Promise<{ subjects: Subject[]; ended: boolean }> {
  const found: Subject[] = [];
  if (after?.type !== "tour") {
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
          agencyId ? eq(appointments.agencyId, agencyId) : undefined,
          after ? gt(appointments.id, after.id) : undefined,
        ),
      )
      .orderBy(asc(appointments.id))
      .limit(limit);
    for (const a of appts)
      found.push({
        type: "appointment",
        id: a.id,
        agencyId: a.agencyId,
        calendarEventId: a.eventId!,
        userId: a.userId,
        expectedStart: a.startsAt,
      });
  }
  if (found.length < limit) {
    const tourRows = await db
      .select({ id: tours.id, agencyId: tours.agencyId, eventId: tours.calendarEventId })
      .from(tours)
      .where(
        and(
          isNotNull(tours.calendarEventId),
          agencyId ? eq(tours.agencyId, agencyId) : undefined,
          after?.type === "tour" ? gt(tours.id, after.id) : undefined,
        ),
      )
      .orderBy(asc(tours.id))
      .limit(limit - found.length);
    for (const t of tourRows)
      found.push({
        type: "tour",
        id: t.id,
        agencyId: t.agencyId,
        calendarEventId: t.eventId!,
        userId: await ownerOf(t.agencyId),
        expectedStart: null,
      });
  }
  return { subjects: found, ended: found.length < limit };
}

const describeFailure = (err: unknown) =>
  err instanceof DomainError ? `${err.code}: ${err.message}` : `unexpected: ${String(err)}`.slice(0, 500);

/** One agency's stored events only (at most `limit`), from the start and without moving the shared cursor. */
interface ReconcileScope {
  agencyId: string;
  limit: number;
}

/**
 * Checks stored calendar events against their calendars, a bounded slice per run: at
 * most SUBJECTS_PER_RUN subjects, resuming after the last one the previous run reached
 * (a cursor in `job_cursors`) and starting over once the list ends. A discrepancy emits
 * `appointment.orphan.detected` once, in the same batch as its open record; while it
 * persists nothing more is emitted; when it heals the record is closed, so a later one
 * is reported again. A connection that fails has its error recorded on its row
 * (`last_error`, `last_checked_at`) and is not asked again in the same run; its subjects
 * are skipped until a later run. A subject that fails unexpectedly is logged and passed.
 */
export async function reconcileCalendars(
  env: Env,
  scope?: ReconcileScope,
  now = Date.now(),
): Promise<{
  checked: number;
  detected: number;
  resolved: number;
  skipped: number;
  errors: number;
  cursor: string | null;
}> {
  const meter = metered(env.DB);
  const db = database(meter.d1);
  const counts = { checked: 0, detected: 0, resolved: 0, skipped: 0, errors: 0 };

  const stored = scope ? undefined : await db.select().from(jobCursors).where(eq(jobCursors.name, RECONCILE_JOB)).get();
  const { ownerOf, connectionOf, sourceOf } = reconcileCaches(db, env);
  const { subjects, ended } = await subjectsAfter(
    db,
    decodePosition(stored?.position),
    scope?.limit ?? SUBJECTS_PER_RUN,
    ownerOf,
    scope?.agencyId,
  );

  const failed = new Set<string>();
  const answered = new Set<string>();
  const recordCheck = (conn: CalendarConnection, error: string | null) =>
    db
      .update(calendarConnections)
      .set({ lastError: error, lastCheckedAt: nowIso() })
      .where(and(eq(calendarConnections.id, conn.id), eq(calendarConnections.agencyId, conn.agencyId)));

  let reached: Position = null;
  let stoppedEarly = false;
  for (const subject of subjects) {
    if (meter.queries() >= QUERY_BUDGET || Date.now() - now >= RUN_DEADLINE_MS) {
      stoppedEarly = true;
      break;
    }
    reached = { type: subject.type, id: subject.id };
    try {
      const conn = subject.userId ? await connectionOf(subject.agencyId, subject.userId) : null;
      if (!conn || failed.has(conn.id)) {
        counts.skipped++;
        continue;
      }
      let event: CalendarEvent;
      try {
        event = await (await sourceOf(conn)).event(subject.calendarEventId);
      } catch (err) {
        // The connection's failure (its provider, or credentials that no longer open): recorded on it.
        failed.add(conn.id);
        counts.skipped++;
        if (!(err instanceof DomainError))
          log.error("calendar connection failed", { job: RECONCILE_JOB, connection_id: conn.id, error: String(err) });
        await recordCheck(conn, describeFailure(err));
        continue;
      }
      if (!answered.has(conn.id)) {
        answered.add(conn.id);
        await recordCheck(conn, null);
      }
      counts.checked++;
      const outcome = await settleSubject(db, subject, event);
      counts.resolved += outcome.resolved;
      if (outcome.detected) counts.detected++;
    } catch (err) {
      counts.errors++;
      log.error("calendar subject check failed", {
        job: RECONCILE_JOB,
        subject_type: subject.type,
        subject_id: subject.id,
        error: String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
    }
  }

  // The whole list seen: the next run starts over. Otherwise it resumes after the last subject reached.
  const cursor = ended && !stoppedEarly ? null : encodePosition(reached ?? decodePosition(stored?.position));
  if (scope) return { ...counts, cursor };
  await db
    .insert(jobCursors)
    .values({ name: RECONCILE_JOB, position: cursor, updatedAt: nowIso() })
    .onConflictDoUpdate({ target: jobCursors.name, set: { position: cursor, updatedAt: nowIso() } });
  return { ...counts, cursor };
}

/** Closes the subject's healed discrepancies and opens (and reports) a new one, once. */
async function settleSubject(
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
