import { and, eq, inArray, isNotNull, isNull, lt, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import {
  apiKeySecrets,
  appointments,
  calendarDiscrepancies,
  idempotencyMarks,
  providerEvents,
  tours,
  webhookReplays,
} from "../db/schema";
import { nowIso } from "../lib/ids";

const DAY_MS = 24 * 3600_000;

/** Rows one statement of a sweep touches at most. */
export const SWEEP_PAGE = 500;

/** A shoot is closed once it ended this long ago; until then reconciliation still checks it. */
const CLOSE_AFTER_MS = DAY_MS;
/** Resolved discrepancies, and open ones of subjects no longer checked, are kept this long after detection. */
const DISCREPANCY_RETENTION_MS = 90 * DAY_MS;
/**
 * Applied payment-provider events are remembered this long: far past the provider's
 * automatic redelivery (three days) and the month its events can be sent again by hand.
 */
const PROVIDER_EVENT_RETENTION_MS = 90 * DAY_MS;
/** A secret that stopped authenticating is kept this long, then its hash is forgotten. */
const ENDED_SECRET_RETENTION_MS = 90 * DAY_MS;

export interface SweepResult {
  rows: number;
  statements: number;
  /** False when the statement ceiling came first; the next night continues. */
  complete: boolean;
}

/** Runs `page` (one statement, at most SWEEP_PAGE rows) until a page comes back short or `maxStatements` ran. */
async function inPages(page: () => Promise<number>, maxStatements: number): Promise<SweepResult> {
  const result: SweepResult = { rows: 0, statements: 0, complete: false };
  while (result.statements < maxStatements) {
    const changed = await page();
    result.statements++;
    result.rows += changed;
    if (changed < SWEEP_PAGE) {
      result.complete = true;
      break;
    }
  }
  return result;
}

/** Closes scheduled shoots that ended more than CLOSE_AFTER_MS ago, a page per statement. */
export function closePastAppointments(db: Db, nowMs: number, maxStatements: number): Promise<SweepResult> {
  const cutoff = nowIso(nowMs - CLOSE_AFTER_MS);
  const page = db
    .select({ id: appointments.id })
    .from(appointments)
    .where(and(eq(appointments.status, "scheduled"), isNull(appointments.closedAt), lt(appointments.endsAt, cutoff)))
    .limit(SWEEP_PAGE);
  return inPages(
    async () =>
      (
        await db
          .update(appointments)
          .set({ closedAt: nowIso(nowMs) })
          .where(and(inArray(appointments.id, page), isNull(appointments.closedAt)))
          .run()
      ).meta.changes,
    maxStatements,
  );
}

/**
 * Deletes discrepancy records detected before the horizon that are history: resolved ones,
 * and open ones whose subject reconciliation no longer checks (a shoot closed or cancelled,
 * a tour gone or off the calendar), which can never heal.
 */
export function sweepDiscrepancies(db: Db, nowMs: number, maxStatements: number): Promise<SweepResult> {
  const cutoff = nowIso(nowMs - DISCREPANCY_RETENTION_MS);
  const d = calendarDiscrepancies;
  const stillChecked: SQL = sql`(${d.subjectType} = 'appointment' AND EXISTS (SELECT 1 FROM ${appointments}
      WHERE ${appointments.id} = ${d.subjectId} AND ${appointments.status} = 'scheduled'
        AND ${appointments.closedAt} IS NULL))
    OR (${d.subjectType} = 'tour' AND EXISTS (SELECT 1 FROM ${tours}
      WHERE ${tours.id} = ${d.subjectId} AND ${tours.calendarEventId} IS NOT NULL))`;
  const page = db
    .select({ id: d.id })
    .from(d)
    .where(
      and(
        lt(d.detectedAt, cutoff),
        sql`((${d.resolvedAt} IS NOT NULL AND ${d.resolvedAt} < ${cutoff}) OR NOT (${stillChecked}))`,
      ),
    )
    .limit(SWEEP_PAGE);
  return inPages(async () => (await db.delete(d).where(inArray(d.id, page)).run()).meta.changes, maxStatements);
}

/** Forgets applied payment-provider events received before the horizon. */
export function sweepProviderEvents(db: Db, nowMs: number, maxStatements: number): Promise<SweepResult> {
  const page = db
    .select({ id: providerEvents.id })
    .from(providerEvents)
    .where(lt(providerEvents.receivedAt, nowIso(nowMs - PROVIDER_EVENT_RETENTION_MS)))
    .limit(SWEEP_PAGE);
  return inPages(
    async () => (await db.delete(providerEvents).where(inArray(providerEvents.id, page)).run()).meta.changes,
    maxStatements,
  );
}

/**
 * Forgets the hashes of secrets that stopped authenticating (a rotation's grace ended)
 * before the horizon. Such a secret is refused as `api_key_invalid` either way; a key
 * keeps at most its current secret, one in grace, and those ended within the horizon.
 */
export function sweepEndedSecrets(db: Db, nowMs: number, maxStatements: number): Promise<SweepResult> {
  const page = db
    .select({ hash: apiKeySecrets.hash })
    .from(apiKeySecrets)
    .where(
      and(
        isNotNull(apiKeySecrets.deactivatedAt),
        lt(apiKeySecrets.deactivatedAt, nowIso(nowMs - ENDED_SECRET_RETENTION_MS)),
      ),
    )
    .limit(SWEEP_PAGE);
  return inPages(
    async () => (await db.delete(apiKeySecrets).where(inArray(apiKeySecrets.hash, page)).run()).meta.changes,
    maxStatements,
  );
}

/**
 * Deletes idempotency commit marks past their 24 hours. The ledger's expiry alarm removes
 * them first; this catches what an alarm never reached.
 */
export function sweepIdempotencyMarks(db: Db, nowMs: number, maxStatements: number): Promise<SweepResult> {
  const cutoff = nowIso(nowMs);
  return inPages(
    async () =>
      // Counted from RETURNING: D1's `changes` also counts what the usage trigger wrote.
      (
        await db.all(
          sql`DELETE FROM ${idempotencyMarks} WHERE rowid IN (SELECT rowid FROM ${idempotencyMarks}
            WHERE ${idempotencyMarks.expiresAt} < ${cutoff} LIMIT ${SWEEP_PAGE}) RETURNING 1`,
        )
      ).length,
    maxStatements,
  );
}

/** Finished webhook replays are kept as long as the events they sent. */
const REPLAY_RETENTION_MS = 30 * DAY_MS;

/** Forgets webhook replays that finished before the horizon (their deliveries follow the event retention). */
export function sweepReplays(db: Db, nowMs: number, maxStatements: number): Promise<SweepResult> {
  const page = db
    .select({ id: webhookReplays.id })
    .from(webhookReplays)
    .where(lt(webhookReplays.finishedAt, nowIso(nowMs - REPLAY_RETENTION_MS)))
    .limit(SWEEP_PAGE);
  return inPages(
    async () => (await db.delete(webhookReplays).where(inArray(webhookReplays.id, page)).run()).meta.changes,
    maxStatements,
  );
}
