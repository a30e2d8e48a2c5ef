import { and, eq, lt } from "drizzle-orm";
import { database } from "../../db/client";
import { webhookDeliveries } from "../../db/schema";
import { nowIso } from "../../lib/ids";

/** Longer than the whole retry schedule (about 65 hours, at most 12 hours between attempts). */
const STALE_PENDING_HOURS = 96;

/**
 * A delivery still pending long after its schedule would have ended has lost its queue
 * message (a dead letter its consumer could not record, say): it is marked dead so the
 * dashboard lists it for replay.
 */
export async function markStaleDeliveriesDead(env: Env, now = Date.now()): Promise<number> {
  const cutoff = nowIso(now - STALE_PENDING_HOURS * 3600 * 1000);
  const rows = await database(env.DB)
    .update(webhookDeliveries)
    .set({ status: "dead", lastError: `no attempt for ${STALE_PENDING_HOURS} hours`, updatedAt: nowIso(now) })
    .where(and(eq(webhookDeliveries.status, "pending"), lt(webhookDeliveries.updatedAt, cutoff)))
    .returning({ id: webhookDeliveries.id });
  return rows.length;
}
