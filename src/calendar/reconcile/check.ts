import { and, eq } from "drizzle-orm";
import { type Db, database } from "../../db/client";
import { type CalendarConnection, calendarConnections } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";
import { log } from "../../lib/telemetry/log";
import type { CalendarEvent } from "../outbound";
import { reconcileCaches } from "./caches";
import { settleSubject } from "./settle";
import type { Subject } from "./subjects";

export const RECONCILE_JOB = "calendar_reconciliation";

/**
 * D1 queries a run may spend before it starts no further subject: under the 1,000 per
 * invocation, with room for the subjects in progress and the outbox drain that follows.
 */
const QUERY_BUDGET = 600;
/** A run starts no further subject after this long, well inside a cron's 15 minutes. */
const RUN_DEADLINE_MS = 5 * 60_000;
/** One call to a calendar, unless CALENDAR_TIMEOUT_MS says otherwise. */
const CALL_TIMEOUT_MS = 8_000;
/** What one calendar may take of a run, its calls together; past it, it is not asked again that run. */
const CONNECTION_BUDGET_MS = 30_000;

const describeFailure = (err: unknown) =>
  err instanceof DomainError ? `${err.code}: ${err.message}` : `unexpected: ${String(err)}`.slice(0, 500);

/** What one run shares across its lanes. */
export function runState(env: Env, d1: D1Database, now: number) {
  const meter = metered(d1);
  const db = database(meter.d1);
  const timeout = Number(env.CALENDAR_TIMEOUT_MS);
  return {
    meter,
    db,
    now,
    callTimeoutMs: Number.isFinite(timeout) && timeout > 0 ? timeout : CALL_TIMEOUT_MS,
    caches: reconcileCaches(db, env),
    counts: { checked: 0, detected: 0, resolved: 0, skipped: 0, errors: 0 },
    /** Connections that failed (or used their time) this run: their subjects are skipped. */
    failed: new Set<string>(),
    answered: new Set<string>(),
    /** Milliseconds each connection has taken so far. */
    spent: new Map<string, number>(),
  };
}
export type Run = ReturnType<typeof runState>;

export const outOfBudget = (run: Run) => run.meter.queries() >= QUERY_BUDGET || Date.now() - run.now >= RUN_DEADLINE_MS;

const recordCheck = (db: Db, conn: CalendarConnection, error: string | null) =>
  db
    .update(calendarConnections)
    .set({ lastError: error, lastCheckedAt: nowIso() })
    .where(and(eq(calendarConnections.id, conn.id), eq(calendarConnections.agencyId, conn.agencyId)));

/** The subject's event as its calendar holds it, within what the connection has left of its time. */
async function fetchEvent(run: Run, conn: CalendarConnection, subject: Subject): Promise<CalendarEvent> {
  const left = Math.min(run.callTimeoutMs, CONNECTION_BUDGET_MS - (run.spent.get(conn.id) ?? 0));
  const timedOut = () =>
    new DomainError("calendar_provider_timeout", {
      message: `The calendar did not answer within ${left} ms; its other events wait for a later run.`,
      details: { provider: conn.provider, timeout_ms: left },
    });
  if (left <= 0) throw timedOut();
  const started = Date.now();
  try {
    return await withDeadline(
      run.caches.sourceOf(conn).then((source) => source.event(subject.calendarEventId)),
      left,
      timedOut,
    );
  } finally {
    run.spent.set(conn.id, (run.spent.get(conn.id) ?? 0) + Date.now() - started);
  }
}

/**
 * Checks one subject. A connection that fails has its error recorded on its row and is not
 * asked again this run; a subject that fails unexpectedly is logged and passed.
 */
export async function checkSubject(run: Run, subject: Subject) {
  const { db, counts } = run;
  try {
    const conn = subject.userId ? await run.caches.connectionOf(subject.agencyId, subject.userId) : null;
    if (!conn || run.failed.has(conn.id)) {
      counts.skipped++;
      return;
    }
    let event: CalendarEvent;
    try {
      event = await fetchEvent(run, conn, subject);
    } catch (err) {
      run.failed.add(conn.id);
      counts.skipped++;
      // An unexpected failure is the operator's to see, once when it starts rather than every run.
      if (!(err instanceof DomainError) && conn.lastError !== describeFailure(err))
        log.error("calendar connection failed", { job: RECONCILE_JOB, connection_id: conn.id, error: String(err) });
      await recordCheck(db, conn, describeFailure(err));
      return;
    }
    if (!run.answered.has(conn.id)) {
      run.answered.add(conn.id);
      await recordCheck(db, conn, null);
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

/** A D1 binding that counts the statements prepared through it: one per query run. */
function metered(d1: D1Database): { d1: D1Database; queries: () => number } {
  let queries = 0;
  const proxy = new Proxy(d1, {
    get(target, prop) {
      if (prop === "prepare")
        return (query: string) => {
          queries++;
          return target.prepare(query);
        };
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return { d1: proxy, queries: () => queries };
}

/**
 * `work`'s answer, or `onTimeout()`'s error once `ms` have passed, whichever comes first:
 * a call that ignores its abort signal still cannot hold its caller past the deadline.
 */
async function withDeadline<T>(work: Promise<T>, ms: number, onTimeout: () => Error): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const expired = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(onTimeout()), ms);
  });
  try {
    return await Promise.race([work, expired]);
  } finally {
    clearTimeout(timer);
  }
}
