import { RECONCILE_CRON, reconcileCalendars } from "./calendar/reconcile";
import { database } from "./db/client";
import { sweepRotatedSecrets } from "./domain/api-keys";
import { keyGate } from "./durable/key-changes";
import { log } from "./lib/log";
import { sweepStuckDeliveries } from "./media/stuck-deliveries";
import { sweepOutbox } from "./webhooks/outbox-sweep";
import { sweepRetention } from "./webhooks/retention";
import { markStaleDeliveriesDead } from "./webhooks/stale-deliveries";

const NIGHTLY = "0 3 * * *";
const EVERY_MINUTE = "* * * * *";

/** Cron entry point: each schedule runs its own jobs. */
export async function runScheduled(controller: ScheduledController, env: Env): Promise<void> {
  if (controller.cron === NIGHTLY) {
    const keyIds = await sweepRotatedSecrets(database(env.DB), controller.scheduledTime);
    await Promise.all(keyIds.map((id) => keyGate(env, id).reload()));
    log.info("rotated secrets swept", { job: "rotation_sweep", keys: keyIds.length });
    log.info("stale webhook deliveries ended", {
      job: "stale_webhook_deliveries",
      dead: await markStaleDeliveriesDead(env, controller.scheduledTime),
    });
    log.info("event retention swept", {
      job: "event_retention",
      ...(await sweepRetention(env, controller.scheduledTime)),
    });
  }
  if (controller.cron === RECONCILE_CRON) {
    log.info("calendars reconciled", { job: "calendar_reconciliation", ...(await reconcileCalendars(env)) });
    // Discrepancies it reported leave now rather than at the next minute's sweep.
    await sweepOutbox(env).catch((err: unknown) =>
      log.error("outbox drain failed", { job: "outbox_drain", error: String(err) }),
    );
  }
  if (controller.cron === EVERY_MINUTE) {
    const stuck = await sweepStuckDeliveries(env, controller.scheduledTime).catch((err: unknown) => {
      log.error("stuck delivery sweep failed", { job: "stuck_deliveries", error: String(err) });
      return { requeued: 0, ended: 0 };
    });
    if (stuck.requeued || stuck.ended) log.info("stuck deliveries swept", { job: "stuck_deliveries", ...stuck });
    // The sweeper: whatever the after-write drain left behind (a failed send, a Worker that died) goes out now.
    const drained = await sweepOutbox(env);
    if (drained.events) log.info("outbox swept", { job: "outbox_sweep", ...drained });
  }
}
