import { and, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { type WebhookEndpoint, type WebhookReplay, webhookReplays } from "../../db/schema";
import { isUniqueViolation } from "../../domain/constraint";
import { agencyQuotaStates } from "../../domain/quotas";
import { DomainError } from "../../lib/errors";
import { newId, nowIso } from "../../lib/ids";
import { countInRange, type ReplayRange, resolveRange } from "./ranges";

/** The endpoint's running replay, if any. */
const runningOf = (db: Db, endpoint: Pick<WebhookEndpoint, "id" | "agencyId">) =>
  db
    .select()
    .from(webhookReplays)
    .where(
      and(
        eq(webhookReplays.agencyId, endpoint.agencyId),
        eq(webhookReplays.endpointId, endpoint.id),
        eq(webhookReplays.status, "running"),
      ),
    )
    .get();

/**
 * Refuses a replay whose deliveries cannot fit the agency's `webhook_deliveries` quota: one
 * at its quota already, or (when every event of the range is to be sent: no filters, not
 * only failed ones) one whose range would pass it. A replay that filters is held to the quota
 * as it sends, by the quota's trigger, and waits while the agency is at it.
 */
async function checkQuota(
  db: Db,
  endpoint: Pick<WebhookEndpoint, "agencyId" | "filters">,
  total: number,
  onlyFailed: boolean,
): Promise<void> {
  if (total === 0) return;
  const quota = (await agencyQuotaStates(db, endpoint.agencyId)).find((q) => q.resource === "webhook_deliveries");
  if (!quota) return;
  const whole = !onlyFailed && !endpoint.filters?.length;
  if (quota.used >= quota.limit || (whole && quota.used + total > quota.limit))
    throw new DomainError("agency_quota_exceeded", {
      message:
        `A replay of ${total} events does not fit the agency's webhook_deliveries quota ` +
        `(${quota.used} of ${quota.limit} used).`,
      details: { resource: "webhook_deliveries", limit: quota.limit, usage: quota.used, requested: total },
    });
}

/**
 * Records a replay of `range` to the endpoint: running, or done at once when the range
 * holds none of the endpoint's events. The range is fixed here (its end is the latest event
 * now); `events_total` counts its events of the endpoint's types. One replay runs per
 * endpoint: a second is 409 `webhook_replay_running`, naming the first. The replay and the
 * request's commit mark are written together.
 */
export async function startReplay(
  db: Db,
  endpoint: Pick<WebhookEndpoint, "id" | "agencyId" | "eventTypes" | "filters">,
  range: ReplayRange,
  onlyFailed: boolean,
  mark: (replay: { id: string }) => BatchItem<"sqlite">[],
  now = Date.now(),
): Promise<WebhookReplay> {
  const running = await runningOf(db, endpoint);
  if (running) throw new DomainError("webhook_replay_running", { details: { replay_id: running.id } });
  const sequences = await resolveRange(db, endpoint.agencyId, range, now);
  const total = await countInRange(db, endpoint.agencyId, sequences, endpoint.eventTypes);
  await checkQuota(db, endpoint, total, onlyFailed);
  const empty = total === 0;
  const at = nowIso(now);
  const id = newId("rpl");
  try {
    const [[replay]] = await db.batch([
      db
        .insert(webhookReplays)
        .values({
          id,
          agencyId: endpoint.agencyId,
          endpointId: endpoint.id,
          status: empty ? "done" : "running",
          fromSequence: sequences.from,
          toSequence: Math.max(sequences.to, sequences.from - 1),
          onlyFailed,
          cursor: empty ? Math.max(sequences.to, sequences.from - 1) : sequences.from - 1,
          eventsTotal: total,
          createdAt: at,
          updatedAt: at,
          finishedAt: empty ? at : null,
        })
        .returning(),
      ...mark({ id }),
    ]);
    return replay!;
  } catch (err) {
    // Another replay of the endpoint started in between.
    if (!isUniqueViolation(err, "webhook_replays")) throw err;
    const other = await runningOf(db, endpoint);
    throw new DomainError("webhook_replay_running", { details: { replay_id: other?.id ?? null } });
  }
}

/** One replay of the agency's endpoint; any other is `webhook_replay_not_found`. */
export async function findReplay(
  db: Db,
  endpoint: Pick<WebhookEndpoint, "id" | "agencyId">,
  replayId: string,
): Promise<WebhookReplay> {
  const replay = await replayOf(db, endpoint.agencyId, replayId);
  if (replay?.endpointId !== endpoint.id) throw new DomainError("webhook_replay_not_found");
  return replay;
}

/**
 * Stops a running replay where it is: events already handed to delivery go on (their
 * deliveries keep their retries); no further one is. A replay already over is left as it is
 * (and `mark`, a commit mark written only if the replay stopped, is not written).
 */
export async function stopReplay(
  db: Db,
  replay: Pick<WebhookReplay, "id" | "agencyId">,
  reason: "cancelled" | "endpoint removed",
  mark: BatchItem<"sqlite">[] = [],
  now = Date.now(),
): Promise<WebhookReplay | undefined> {
  const at = nowIso(now);
  const stop = db
    .update(webhookReplays)
    .set({ status: "cancelled", reason, updatedAt: at, finishedAt: at })
    .where(
      and(
        eq(webhookReplays.id, replay.id),
        eq(webhookReplays.agencyId, replay.agencyId),
        eq(webhookReplays.status, "running"),
      ),
    )
    .returning();
  const [[stopped]] = await db.batch([stop, ...mark]);
  return stopped;
}

/** A replay as its agency stores it now. */
export const replayOf = (db: Db, agencyId: string, replayId: string) =>
  db
    .select()
    .from(webhookReplays)
    .where(and(eq(webhookReplays.id, replayId), eq(webhookReplays.agencyId, agencyId)))
    .get();
