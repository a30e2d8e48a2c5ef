import { database } from "../../db/client";
import { errorText, log } from "../../lib/telemetry/log";
import { recordDelivery } from "../../lib/telemetry/usage";
import { holdStatement } from "../endpoints/holds";
import { type Lane, lanesOf, slots } from "../endpoints/lanes";
import { attemptDelivery, batchSigners } from "./attempt";
import { type Claim, claimBatch, type Target } from "./claim";
import { CONNECTIONS_PER_BATCH, type ConsumerLimits, ENDPOINT_IN_FLIGHT, LIMITS } from "./limits";
import { type AttemptOutcome, outcomeWriter } from "./outcome-writer";
import { type DeliveryBody, logDeliveryFailure, messageSettler, retryLater } from "./settling";

/** The attempt's usage data point: delivered, failed (retried later) or dead. */
export function recordAttempt(env: Env, target: Target, eventType: string | undefined, outcome: AttemptOutcome): void {
  recordDelivery(env.USAGE, {
    agencyId: target.delivery.agencyId,
    endpointId: target.delivery.endpointId,
    eventType: eventType ?? "",
    outcome: outcome.final ?? "failed",
    status: outcome.status,
    environment: env.ENVIRONMENT,
    latencyMs: outcome.latencyMs,
    attempt: outcome.attempt,
  });
}

/**
 * The webhook queue's consumer: one message per delivery. The batch's D1 work is a few
 * round trips whatever its size: one leases and loads every deliverable row (claimBatch),
 * and the outcomes are written in groups as attempts end (outcomeWriter); each message is
 * settled (acked, or retried with backoff) once its own outcome is written. Slow and
 * failing receivers cost their own endpoint's deliveries, not the batch:
 * - attempts run concurrently, at most CONNECTIONS_PER_BATCH requests open at once and
 *   ENDPOINT_IN_FLIGHT per endpoint (1 for an endpoint that is failing), healthy
 *   endpoints first, round-robin across agencies;
 * - an endpoint whose attempt fails in this batch gets no further attempt in it, and one
 *   whose breaker is open (BREAKER_FAILURES failures in a row, or one timeout) gets none
 *   until its pause ends: those messages are retried later without a request;
 * - no attempt starts after START_WINDOW_MS, so a batch's work lasts at most about the
 *   window plus the 10 s timeout;
 * - the batch holds the queue for BATCH_DEADLINE_MS at most (see handOver): the work still
 *   running then goes on in the background, so another agency's batch behind it never
 *   waits for a hanging receiver's timeout.
 * A message that is not attempted is retried as if it had failed (never sooner than the
 * schedule, and not before the endpoint's pause ends), so a delivery still gets its ~3 days
 * before the dead-letter queue; the lease of a delivery leased but not attempted is freed.
 * A failure of our own (D1, a sealed secret that does not open) retries that message
 * alone on the same schedule. A crash after a request and before its outcome is written
 * leaves the message unsettled (or retried): it is delivered again (at least once).
 */
export async function consumeWebhooks(
  batch: MessageBatch<DeliveryBody>,
  env: Env,
  ctx: Pick<ExecutionContext, "waitUntil">,
  limits: Partial<ConsumerLimits> = {},
): Promise<void> {
  const { timeoutMs, startWindowMs, deadlineMs } = { ...LIMITS, ...limits };
  const db = database(env.DB);
  const started = Date.now();

  let claim: Claim;
  try {
    claim = await claimBatch(db, [...new Set(batch.messages.map((m) => m.body.delivery_id))], started);
  } catch (err) {
    for (const message of batch.messages) {
      logDeliveryFailure(message, err);
      retryLater(message);
    }
    return;
  }

  const ordered = lanesOf(batch.messages, claim);
  const endpointOf = new Map(ordered.flatMap((lane) => lane.pending.map((p) => [p.message, lane.endpointId])));
  const writer = outcomeWriter(env.DB, claim.lease);
  const settler = messageSettler(writer, [...endpointOf.keys()]);
  const signerOf = batchSigners(env);
  const connections = slots(CONNECTIONS_PER_BATCH);
  const work = async (lane: Lane) => {
    for (let next = lane.pending.shift(); next; next = lane.pending.shift()) {
      const { message, target, attempts } = next;
      if (lane.failedHere) {
        settler.putBack(message);
        continue;
      }
      let outcome: AttemptOutcome;
      await connections.acquire();
      try {
        if (lane.failedHere || Date.now() - started > startWindowMs) {
          settler.putBack(message);
          continue;
        }
        outcome = await attemptDelivery(
          env,
          target,
          claim.events.get(target.delivery.eventId),
          attempts + 1,
          timeoutMs,
          signerOf,
          message.body.traceparent,
        );
      } catch (err) {
        logDeliveryFailure(message, err);
        settler.putBack(message);
        continue;
      } finally {
        connections.release();
      }
      const failed = outcome.health !== undefined && outcome.health !== "healthy";
      if (failed) lane.failedHere = true;
      recordAttempt(env, target, claim.events.get(target.delivery.eventId)?.eventType, outcome);
      settler.record(message, outcome, failed);
    }
  };
  const workers = new Map<Lane, Promise<void>[]>(ordered.map((lane) => [lane, []]));
  for (let i = 0; i < ENDPOINT_IN_FLIGHT; i++)
    for (const lane of ordered) if (i === 0 || !lane.failing) workers.get(lane)!.push(work(lane));
  const lanesDone = ordered.map((lane) => Promise.all(workers.get(lane)!).then(() => lane));
  const done = Promise.all(lanesDone).then(() => settler.settled());
  if (await within(done, started + deadlineMs - Date.now())) return;

  // Past the deadline: the queue moves on. The messages still open are retried past the
  // lease (a redelivery finds its delivery settled and is acked, or tries again if this
  // invocation died), and their endpoints are held until their attempts here have ended.
  const held = new Set(settler.handOver(Date.parse(claim.lease)).map((m) => endpointOf.get(m)!));
  if (held.size)
    await holdStatement(env.DB, [...held], claim.lease, Date.now())
      .run()
      .catch((err: unknown) =>
        log.error("webhook endpoint hold failed", { job: "webhook_delivery", error: errorText(err) }),
      );
  const freed = lanesDone.map(async (laneDone) => {
    const lane = await laneDone;
    if (held.has(lane.endpointId)) await writer.free(lane.endpointId);
  });
  ctx.waitUntil(Promise.allSettled([...freed, settler.settled()]));
}

/** Whether `work` finished within `ms`. */
async function within(work: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const deadline = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), Math.max(0, ms));
  });
  try {
    return await Promise.race([work.then(() => true), deadline]);
  } finally {
    clearTimeout(timer);
  }
}
