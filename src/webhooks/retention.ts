import { and, eq, inArray, isNotNull, lt, notExists, sql } from "drizzle-orm";
import { type Db, database } from "../db/client";
import { events, webhookDeliveries, webhookDeliveryAttempts } from "../db/schema";
import { retentionCutoff } from "../domain/events/log";

/** Rows deleted by one statement at most. */
export const RETENTION_PAGE = 500;
/** Statements one nightly run spends at most (200,000 rows); what is left waits for the next night. */
const RETENTION_MAX_STATEMENTS = 400;

/**
 * A delivery the sweep may delete: settled (delivered or dead) and last touched before
 * the horizon. A pending delivery is never deleted, whatever its age: retries end about
 * three days after the first attempt, so only a delivery replayed from the dashboard can
 * be pending past the horizon, and it keeps its log (and its event) until it settles.
 */
const settledBefore = (cutoff: string) =>
  and(inArray(webhookDeliveries.status, ["delivered", "dead"]), lt(webhookDeliveries.updatedAt, cutoff));

/** One page of attempts of deletable deliveries. */
function deleteAttempts(db: Db, cutoff: string) {
  const page = db
    .select({ id: webhookDeliveryAttempts.id })
    .from(webhookDeliveryAttempts)
    .innerJoin(webhookDeliveries, eq(webhookDeliveries.id, webhookDeliveryAttempts.deliveryId))
    .where(settledBefore(cutoff))
    .limit(RETENTION_PAGE);
  return db.delete(webhookDeliveryAttempts).where(inArray(webhookDeliveryAttempts.id, page)).run();
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
  return db.delete(webhookDeliveries).where(inArray(webhookDeliveries.id, page)).run();
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
  return db.delete(events).where(inArray(events.id, page)).run();
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
      const deleted = (await step(db, cutoff)).meta.changes;
      result.statements++;
      result[name] += deleted;
      if (deleted < RETENTION_PAGE) break;
    }
  }
  result.complete = true;
  return result;
}
