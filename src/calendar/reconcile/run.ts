import { eq, inArray } from "drizzle-orm";
import { jobCursors } from "../../db/schema";
import { nowIso } from "../../lib/ids";
import { checkSubject, outOfBudget, RECONCILE_JOB, type Run, runState } from "./check";
import {
  agenciesInTurn,
  decodePosition,
  encodePosition,
  type Position,
  type Subject,
  subjectsAfter,
  type Window,
} from "./subjects";

export const RECONCILE_CRON = "*/15 * * * *";
/**
 * Stored events checked per run. Each costs at most two outbound fetches (its event, and
 * the token refresh or feed download of its connection, made once per run), so a run
 * makes at most 100 subrequests.
 */
export const SUBJECTS_PER_RUN = 50;
/** Agencies that take a turn in one run; the next run goes on with the agencies after them. */
const AGENCIES_PER_RUN = 10;
/** Each agency of a turn checks at least this many of its events (10 × 5 = SUBJECTS_PER_RUN). */
const MIN_SHARE = 5;
/** Agencies checked side by side: one agency's slow calendar holds only its own lane. */
const LANES = 3;
/** Shoots that ended up to this long ago are still checked (the nightly sweep closes older ones)… */
const WINDOW_BEHIND_MS = 24 * 3600_000;
/** …and shoots starting up to this far ahead. */
const WINDOW_AHEAD_MS = 90 * 24 * 3600_000;

/** Where one agency's walk resumes, in `job_cursors`. */
export const agencyCursorName = (agencyId: string) => `${RECONCILE_JOB}:${agencyId}`;

/** One agency's stored events only (at most `limit`), from the start and without moving any cursor. */
interface ReconcileScope {
  agencyId: string;
  limit: number;
}

interface Plan {
  agencyId: string;
  after: Position;
  subjects: Subject[];
  ended: boolean;
}

/** Checks a plan's subjects in order; answers where the agency's next turn resumes (null: from the start). */
async function checkAgency(run: Run, plan: Plan): Promise<string | null> {
  let reached: Position = null;
  for (const subject of plan.subjects) {
    if (outOfBudget(run)) return encodePosition(reached ?? plan.after);
    reached = { type: subject.type, id: subject.id };
    await checkSubject(run, subject);
  }
  return plan.ended ? null : encodePosition(reached ?? plan.after);
}

/** Runs the plans in LANES lanes; answers each plan's next cursor, in plan order. */
async function inLanes(run: Run, plans: Plan[]): Promise<(string | null)[]> {
  const cursors: (string | null)[] = plans.map((p) => encodePosition(p.after));
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < plans.length; i = next++) cursors[i] = await checkAgency(run, plans[i]!);
  };
  await Promise.all(Array.from({ length: Math.min(LANES, plans.length) }, lane));
  return cursors;
}

/**
 * Each agency of the turn gets an equal share of the run; what agencies with fewer events
 * leave over goes to those with more, in turn order.
 */
async function planTurn(run: Run, turn: string[], stored: Map<string, string | null>, window: Window) {
  const share = Math.max(MIN_SHARE, Math.floor(SUBJECTS_PER_RUN / turn.length));
  const plans: Plan[] = [];
  for (const agencyId of turn) {
    const after = decodePosition(stored.get(agencyId));
    plans.push({
      agencyId,
      after,
      ...(await subjectsAfter(run.db, agencyId, after, share, run.caches.ownerOf, window)),
    });
  }
  let left = SUBJECTS_PER_RUN - plans.reduce((n, p) => n + p.subjects.length, 0);
  for (const plan of plans) {
    if (left <= 0) break;
    if (plan.ended) continue;
    const last = plan.subjects.at(-1);
    const more = await subjectsAfter(
      run.db,
      plan.agencyId,
      last ? { type: last.type, id: last.id } : plan.after,
      left,
      run.caches.ownerOf,
      window,
    );
    plan.subjects.push(...more.subjects);
    plan.ended = more.ended;
    left -= more.subjects.length;
  }
  return plans;
}

/**
 * Checks stored calendar events against their calendars, a bounded slice per run. Only
 * open shoots (not cancelled, not closed) overlapping a window from a day ago to 90 days
 * ahead are checked, and tours on a calendar. Agencies take turns: up to AGENCIES_PER_RUN
 * per run, in id order after the agency the last run ended with, each with its share of
 * SUBJECTS_PER_RUN and resuming after the last event of its previous turn (a cursor per
 * agency in `job_cursors`). A discrepancy emits `appointment.orphan.detected` once, in
 * the same batch as its open record; when it heals the record is closed, so a later one
 * is reported again. A calendar that fails or uses its time is recorded on its connection
 * (`last_error`, `last_checked_at`) and not asked again in the same run.
 */
/** `d1` is the binding it reads and writes through: a request's own, or the plain one. */
export async function reconcileCalendars(env: Env, scope?: ReconcileScope, now = Date.now(), d1 = env.DB) {
  const run = runState(env, d1, now);
  const { db } = run;
  if (scope) {
    const plan = {
      agencyId: scope.agencyId,
      after: null,
      ...(await subjectsAfter(db, scope.agencyId, null, scope.limit, run.caches.ownerOf)),
    };
    const [cursor] = await inLanes(run, [plan]);
    return { ...run.counts, agencies: 1, cursor: cursor ?? null };
  }
  const window = { from: nowIso(now - WINDOW_BEHIND_MS), to: nowIso(now + WINDOW_AHEAD_MS) };
  const names = (ids: string[]) => ids.map(agencyCursorName);
  const shared = await db.select().from(jobCursors).where(eq(jobCursors.name, RECONCILE_JOB)).get();
  const turn = await agenciesInTurn(db, shared?.position ?? null, window, AGENCIES_PER_RUN);
  const stored = new Map<string, string | null>();
  if (turn.length) {
    const rows = await db
      .select()
      .from(jobCursors)
      .where(inArray(jobCursors.name, names(turn)));
    const byName = new Map(rows.map((r) => [r.name, r.position]));
    for (const id of turn) stored.set(id, byName.get(agencyCursorName(id)) ?? null);
  }
  const cursors = await inLanes(run, await planTurn(run, turn, stored, window));
  const cursor = turn.at(-1) ?? null;
  const at = nowIso();
  const upsert = (name: string, position: string | null) =>
    db
      .insert(jobCursors)
      .values({ name, position, updatedAt: at })
      .onConflictDoUpdate({ target: jobCursors.name, set: { position, updatedAt: at } });
  await db.batch([upsert(RECONCILE_JOB, cursor), ...turn.map((id, i) => upsert(agencyCursorName(id), cursors[i]!))]);
  return { ...run.counts, agencies: turn.length, cursor };
}
