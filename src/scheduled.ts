import { database } from "./db/client";
import { sweepRotatedSecrets } from "./domain/api-keys";

export const NIGHTLY = "0 3 * * *";

/** Cron entry point: each schedule runs its own jobs. */
export async function runScheduled(controller: ScheduledController, env: Env): Promise<void> {
  if (controller.cron === NIGHTLY) {
    const swept = await sweepRotatedSecrets(database(env.DB), controller.scheduledTime);
    console.log(JSON.stringify({ job: "rotation_sweep", swept }));
  }
}
