import { and, eq, inArray, isNotNull, lt, notExists, sql } from "drizzle-orm";
import { type Db, database } from "../db/client";
import { events, webhookDeliveries, webhookDeliveryAttempts } from "../db/schema";
import { retentionCutoff } from "../domain/events/log";

/** Rows deleted by one statement at most. */
export const RETENTION_PAGE = 500;
/** Statements one nightly run spends at most (200,000 rows); what is left waits for the next night. */
const RETENTION_MAX_STATEMENTS = 400;
/**
 * Statements each every-minute run spends at most (20,000 rows). A run with nothing due
 * costs three statements; with a backlog, about a minute of it goes each minute, so the
 * sweep keeps pace with what the quotas let an agency hold (docs/limits.md, "Retention
 * keeps pace").
 */
export const RETENTION_MINUTE_STATEMENTS = 40;
/** Rows the sweep can remove in a day from one database: every minute's run, and the nightly one. */
export const RETENTION_ROWS_PER_DAY =
  (24 * 60 * RETENTION_MINUTE_STATEMENTS + RETENTION_MAX_STATEMENTS) * RETENTION_PAGE;

/**
 * A delivery the sweep may delete: settled (delivered, dead or filtered) and last touched before
 * the horizon. A pending delivery is never deleted, whatever its age: retries end about
 * three days after the first attempt, so only a delivery replayed from the dashboard can
 * be pending past the horizon, and it keeps its log (and its event) until it settles.
 */
const settledBefore = (cutoff: string) =>
  and(inArray(webhookDeliveries.status, ["delivered", "dead", "filtered"]), lt(webhookDeliveries.updatedAt, cutoff));

/** One page of attempts of deletable deliveries. */
function deleteAttempts(db: Db, cutoff: string) {
  const page = db
    .select({ id: webhookDeliveryAttempts.id })
    .from(webhookDeliveryAttempts)
    .innerJoin(webhookDeliveries, eq(webhookDeliveries.id, webhookDeliveryAttempts.deliveryId))
    .where(settledBefore(cutoff))
    .limit(RETENTION_PAGE);
  return db
    .delete(webhookDeliveryAttempts)
    .where(inArray(webhookDeliveryAttempts.id, page))
    .returning({ id: webhookDeliveryAttempts.id });
}

/** One page of deletable deliveries whose attempts are gone (attempts reference their delivery). */
function deleteDeliveries(db: Db, cutoff: string) {
  const page = db
    .select({ id: webhookDeliveries.id })
    .from(webhookDeliveries)
    .where(
      and(
        settledBefore(cutoff),
        notExists(
          db
            .select({ one: sql`1` })
            .from(webhookDeliveryAttempts)
            .where(eq(webhookDeliveryAttempts.deliveryId, webhookDeliveries.id)),
        ),
      ),
    )
    .limit(RETENTION_PAGE);
  return db
    .delete(webhookDeliveries)
    .where(inArray(webhookDeliveries.id, page))
    .returning({ id: webhookDeliveries.id });
}

/**
 * One page of events past the horizon that no delivery refers to any more, and that
 * went out of the outbox: an event the drain has not sent yet is never deleted.
 */
function deleteEvents(db: Db, cutoff: string) {
  const page = db
    .select({ id: events.id })
    .from(events)
    .where(
      and(
        lt(events.createdAt, cutoff),
        isNotNull(events.enqueuedAt),
        notExists(db.select({ one: sql`1` }).from(webhookDeliveries).where(eq(webhookDeliveries.eventId, events.id))),
      ),
    )
    .limit(RETENTION_PAGE);
  return db.delete(events).where(inArray(events.id, page)).returning({ id: events.id });
}

interface RetentionSweep {
  attempts: number;
  deliveries: number;
  events: number;
  statements: number;
  /** False when the statement budget ran out first; the next night continues. */
  complete: boolean;
}

/**
 * The nightly retention sweep: events older than the retention horizon, with their
 * webhook deliveries and attempts, in pages of RETENTION_PAGE rows, at most
 * RETENTION_MAX_STATEMENTS statements per run. Children go before their parents
 * (attempts, then deliveries, then events), so a run cut short leaves no dangling row.
 * Each page is chosen by a subquery, so no statement binds more than a few parameters.
 */
export async function sweepRetention(
  env: Pick<Env, "DB">,
  now = Date.now(),
  maxStatements = RETENTION_MAX_STATEMENTS,
): Promise<RetentionSweep> {
  const db = database(env.DB);
  const cutoff = retentionCutoff(now);
  const result: RetentionSweep = { attempts: 0, deliveries: 0, events: 0, statements: 0, complete: false };
  const steps = [
    ["attempts", deleteAttempts],
    ["deliveries", deleteDeliveries],
    ["events", deleteEvents],
  ] as const;
  for (const [name, step] of steps) {
    for (;;) {
      if (result.statements >= maxStatements) return result;
      // Rows deleted, counted from RETURNING: D1's `changes` also counts what the usage triggers wrote.
      const deleted = (await step(db, cutoff)).length;
      result.statements++;
      result[name] += deleted;
      if (deleted < RETENTION_PAGE) break;
    }
  }
  result.complete = true;
  return result;
}
