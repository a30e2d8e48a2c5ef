import { and, eq, lt } from "drizzle-orm";
import { database } from "../db/client";
import { type WebhookReplay, webhookReplays } from "../db/schema";
import { nowIso } from "../lib/ids";
import { logFailure } from "../lib/telemetry/log";

type Driven = Pick<WebhookReplay, "id" | "agencyId" | "endpointId">;

/** Has the endpoint's replayer drive a replay just recorded as running. */
const drive = (env: Env, replay: Driven) =>
  env.WEBHOOK_REPLAYER.getByName(replay.endpointId).start(replay.id, replay.agencyId);

/**
 * Wakes the replayer of a replay just started, if it runs. A wake-up that fails is logged, not
 * answered: the replay is recorded, and the minute's sweep of stalled replays wakes it.
 */
export async function driveStarted(env: Env, replay: Driven & Pick<WebhookReplay, "status">): Promise<void> {
  if (replay.status !== "running") return;
  await drive(env, replay).catch((err: unknown) =>
    logFailure("webhook replay wake failed", { replay_id: replay.id }, err),
  );
}

/** A running replay untouched this long has lost its driver's alarm (or never had it): it is woken again. */
const STALLED_MS = 2 * 60_000;
/** Replays woken per shard per minute at most. */
const WAKE_PAGE = 50;

/**
 * Wakes the replayers of running replays on this shard that have not moved for STALLED_MS
 * (a wake-up that failed after the replay was recorded, an alarm lost). Waking one that is
 * only waiting (its endpoint's breaker is open) costs one step, which waits again.
 */
export async function wakeStalledReplays(env: Env, now = Date.now()): Promise<number> {
  const stalled = await database(env.DB)
    .select({ id: webhookReplays.id, agencyId: webhookReplays.agencyId, endpointId: webhookReplays.endpointId })
    .from(webhookReplays)
    .where(and(eq(webhookReplays.status, "running"), lt(webhookReplays.updatedAt, nowIso(now - STALLED_MS))))
    .limit(WAKE_PAGE);
  await Promise.all(stalled.map((r) => drive(env, r)));
  return stalled.length;
}
