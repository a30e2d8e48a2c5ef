import { database } from "./db/client";
import { keyGate, sweepRotatedSecrets } from "./domain/api-keys";

export const NIGHTLY = "0 3 * * *";

/** Cron entry point: each schedule runs its own jobs. */
export async function runScheduled(controller: ScheduledController, env: Env): Promise<void> {
  if (controller.cron === NIGHTLY) {
    const keyIds = await sweepRotatedSecrets(database(env.DB), controller.scheduledTime);
    await Promise.all(keyIds.map((id) => keyGate(env, id).reload()));
    console.log(JSON.stringify({ job: "rotation_sweep", keys: keyIds.length }));
  }
}
