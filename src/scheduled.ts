import { keyGate } from "./accounts/key-changes";
import { RECONCILE_CRON, reconcileCalendars } from "./calendar/reconcile/run";
import { type Db, database } from "./db/client";
import { SHARD_NAMES, shardEnv } from "./db/shards";
import { sweepRotatedSecrets } from "./domain/api-keys";
import { purgeSessions } from "./domain/people/sessions";
import { reseal } from "./domain/reseal";
import {
  closePastAppointments,
  type SweepResult,
  sweepDiscrepancies,
  sweepEndedSecrets,
  sweepIdempotencyMarks,
  sweepProviderEvents,
  sweepReplays,
} from "./domain/retention";
import { wakeStalledReplays } from "./durable/replay-driver";
import { keyringOf } from "./lib/crypto/keyring";
import { errorText, log, logFailure } from "./lib/telemetry/log";
import { inRun } from "./lib/telemetry/run-event";
import { sweepStuckDeliveries } from "./media/delivery/stuck";
import { markStaleDeliveriesDead } from "./webhooks/delivery/stale";
import { sweepOutbox } from "./webhooks/outbox/sweep";
import { RETENTION_MINUTE_STATEMENTS, sweepRetention } from "./webhooks/retention";

const NIGHTLY = "0 3 * * *";
const EVERY_MINUTE = "* * * * *";

/** Rotated secrets deactivated per page; their keys' gates reload together, at most this many at once. */
const ROTATION_PAGE = 50;
/** Pages per night (500 secrets); what is left waits for the next night, refused meanwhile by its age. */
const ROTATION_MAX_PAGES = 10;

/** Ends rotated secrets past their grace, page by page, and has each touched key's gate reload. */
async function sweepRotation(env: Env, at: number) {
  const db = database(env.DB);
  let secrets = 0;
  let keys = 0;
  let reloadFailures = 0;
  for (let page = 0; page < ROTATION_MAX_PAGES; page++) {
    const swept = await sweepRotatedSecrets(db, at, ROTATION_PAGE);
    secrets += swept.secrets;
    keys += swept.keyIds.length;
    const reloads = await Promise.allSettled(swept.keyIds.map((id) => keyGate(env, id).reload()));
    for (const [i, r] of reloads.entries()) {
      if (r.status === "fulfilled") continue;
      reloadFailures++;
      log.error("key gate reload failed", {
        job: "rotation_sweep",
        key_id: swept.keyIds[i],
        error: errorText(r.reason),
      });
    }
    if (swept.secrets < ROTATION_PAGE) break;
  }
  return { secrets, keys, reload_failures: reloadFailures };
}

/** A paged sweep of the one database, held to `maxStatements` statements a night. */
const nightlyPages =
  (sweep: (db: Db, at: number, maxStatements: number) => Promise<SweepResult>, maxStatements: number) =>
  (env: Env, at: number) =>
    sweep(database(env.DB), at, maxStatements);

/** The nightly jobs, each run on its own: one that fails is logged and the others still run. */
const NIGHTLY_JOBS: [job: string, message: string, run: (env: Env, at: number) => Promise<object>][] = [
  ["rotation_sweep", "rotated secrets swept", sweepRotation],
  [
    "stale_webhook_deliveries",
    "stale webhook deliveries ended",
    async (env, at) => ({ dead: await markStaleDeliveriesDead(env, at) }),
  ],
  ["event_retention", "event retention swept", (env, at) => sweepRetention(env, at)],
  ["session_purge", "expired sessions purged", (env, at) => purgeSessions(database(env.DB), at)],
  ["appointment_close", "past appointments closed", nightlyPages(closePastAppointments, 20)],
  ["discrepancy_retention", "discrepancy history swept", nightlyPages(sweepDiscrepancies, 10)],
  ["provider_event_retention", "provider events swept", nightlyPages(sweepProviderEvents, 10)],
  ["secret_retention", "ended secrets forgotten", nightlyPages(sweepEndedSecrets, 10)],
  ["replay_retention", "finished webhook replays swept", nightlyPages(sweepReplays, 10)],
  ["idempotency_mark_purge", "expired idempotency marks purged", nightlyPages(sweepIdempotencyMarks, 100)],
  // After a master key rotation: what the older keys sealed, sealed again under SECRET_KEY.
  ["reseal", "sealed secrets re-sealed", (env) => reseal(database(env.DB), keyringOf(env))],
];

/**
 * Cron entry point: each schedule runs its own jobs on every shard in turn, each shard under
 * its own environment (`shardEnv`) and with each job's own bounds, so one shard's backlog
 * never takes another's turn. One wide event per run.
 */
export function runScheduled(controller: ScheduledController, env: Env): Promise<void> {
  const fields = { cron: controller.cron, shards: SHARD_NAMES.length };
  return inRun({ job: "cron", environment: env.ENVIRONMENT, fields }, async () => {
    const failures: unknown[] = [];
    for (const shard of SHARD_NAMES) {
      await runJobs(controller, shardEnv(env, shard)).catch((err: unknown) => failures.push(err));
    }
    // A shard whose run failed did not stop the others; the run still fails, as it did.
    if (failures.length) throw failures[0];
  });
}

async function runJobs(controller: ScheduledController, env: Env): Promise<void> {
  if (controller.cron === NIGHTLY) {
    for (const [job, message, run] of NIGHTLY_JOBS) {
      try {
        const result = await run(env, controller.scheduledTime);
        log.info(message, { job, ...result });
      } catch (err) {
        logFailure("nightly job failed", { job }, err);
      }
    }
  }
  if (controller.cron === RECONCILE_CRON) {
    log.info("calendars reconciled", { job: "calendar_reconciliation", ...(await reconcileCalendars(env)) });
    // Discrepancies it reported leave now rather than at the next minute's sweep.
    await sweepOutbox(env).catch((err: unknown) => logFailure("outbox drain failed", { job: "outbox_drain" }, err));
  }
  if (controller.cron === EVERY_MINUTE) {
    const stuck = await sweepStuckDeliveries(env, controller.scheduledTime).catch((err: unknown) => {
      log.error("stuck delivery sweep failed", { job: "stuck_deliveries", error: String(err) });
      return { requeued: 0, ended: 0 };
    });
    if (stuck.requeued || stuck.ended) log.info("stuck deliveries swept", { job: "stuck_deliveries", ...stuck });
    // A replay whose driver was never woken (or lost its alarm) goes on.
    const woken = await wakeStalledReplays(env, controller.scheduledTime).catch((err: unknown) => {
      logFailure("replay wake failed", { job: "webhook_replays" }, err);
      return 0;
    });
    if (woken) log.info("stalled webhook replays woken", { job: "webhook_replays", woken });
    // The sweeper: whatever the after-write drain left behind (a failed send, a Worker that died) goes out now.
    const drained = await sweepOutbox(env);
    if (drained.events) log.info("outbox swept", { job: "outbox_sweep", ...drained });
    // Retention a minute at a time, so a day's removals outrun what the quotas let agencies hold.
    const swept = await sweepRetention(env, controller.scheduledTime, RETENTION_MINUTE_STATEMENTS).catch(
      (err: unknown) => {
        logFailure("event retention failed", { job: "event_retention" }, err);
        return undefined;
      },
    );
    if (swept && swept.attempts + swept.deliveries + swept.events > 0) {
      log.info("event retention swept", { job: "event_retention", ...swept });
    }
  }
}
