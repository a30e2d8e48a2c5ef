import { and, asc, eq, inArray, lt } from "drizzle-orm";
import { database } from "../../db/client";
import { mediaDeliveries } from "../../db/schema";
import { nowIso } from "../../lib/ids";
import { log } from "../../lib/telemetry/log";
import { sendJob } from "../jobs";
import { abandonDelivery } from "./finish";
import { MAX_DELIVERY_ATTEMPTS } from "./retry";

/** A delivery unfinished with no progress for this long is picked up by the sweep. */
export const STUCK_DELIVERY_MS = 30 * 60_000;
/** Deliveries the sweep handles per run, oldest first; the rest wait for the next run. */
const STUCK_SWEEP_PAGE = 25;

/**
 * The backstop for deliveries whose job was lost: one unfinished (`queued` or
 * `delivering`) with no progress for STUCK_DELIVERY_MS is sent again, which counts as an
 * attempt, or, when its attempts are spent, ended with its final event. Each row is
 * claimed by a guarded write first, so two sweeps never both send it.
 */
export async function sweepStuckDeliveries(env: Env, now = Date.now()): Promise<{ requeued: number; ended: number }> {
  const db = database(env.DB);
  const stuck = await db
    .select()
    .from(mediaDeliveries)
    .where(
      and(
        inArray(mediaDeliveries.status, ["queued", "delivering"]),
        lt(mediaDeliveries.updatedAt, nowIso(now - STUCK_DELIVERY_MS)),
      ),
    )
    .orderBy(asc(mediaDeliveries.updatedAt))
    .limit(STUCK_SWEEP_PAGE)
    .all();
  const counts = { requeued: 0, ended: 0 };
  for (const d of stuck) {
    try {
      if (d.attempts + 1 >= MAX_DELIVERY_ATTEMPTS) {
        const reason = `delivery abandoned: no progress for ${STUCK_DELIVERY_MS / 60_000} minutes`;
        if (await abandonDelivery(db, d.id, reason)) counts.ended++;
        continue;
      }
      const [claim] = await db
        .update(mediaDeliveries)
        .set({ attempts: d.attempts + 1, updatedAt: nowIso(now) })
        .where(and(eq(mediaDeliveries.id, d.id), eq(mediaDeliveries.updatedAt, d.updatedAt)))
        .returning({ id: mediaDeliveries.id });
      if (!claim) continue;
      await sendJob(env.MEDIA_QUEUE, { kind: "delivery", delivery_id: d.id });
      counts.requeued++;
    } catch (err) {
      log.error("stuck delivery sweep failed", { job: "stuck_deliveries", delivery_id: d.id, error: String(err) });
    }
  }
  return counts;
}
