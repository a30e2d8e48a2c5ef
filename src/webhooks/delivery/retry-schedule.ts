import type { WebhookDelivery, WebhookDeliveryAttempt } from "../../db/schema";
import { doublingBackoff } from "../../lib/backoff";
import { nowIso } from "../../lib/ids";

export const FIRST_RETRY_SECONDS = 30;
export const MAX_RETRY_DELAY_SECONDS = 12 * 60 * 60;

/**
 * Seconds before the queue redelivers a message after its failed attempt `attempt`
 * (1-based; a replay starts again at 1): 30 s doubling, capped at 12 hours. With the queue's 15 retries that
 * is 16 attempts over about 65 hours, after
 * which the message goes to the dead-letter queue.
 */
export const retryDelay = (attempt: number) => doublingBackoff(attempt, FIRST_RETRY_SECONDS, MAX_RETRY_DELAY_SECONDS);

/** Attempts of one run of the queue: the first try and the webhook queue's 15 retries (wrangler.jsonc max_retries). */
export const ATTEMPTS_PER_RUN = 16;

/**
 * When the queue will next try a pending delivery, computed, not stored: the attempts
 * of the current run (since the last replay, which restarts the schedule at its first
 * step) and `retryDelay` after the last of them. A pending delivery not yet tried in
 * this run is due at once (it waits in the queue); one whose run is spent is on its way
 * to the dead-letter queue and has none. An estimate: the queue adds its own latency.
 */
export function nextAttemptAt(delivery: WebhookDelivery, attempts: WebhookDeliveryAttempt[]): string | null {
  if (delivery.status !== "pending") return null;
  const since = delivery.replayedAt;
  const run = since === null ? attempts : attempts.filter((a) => a.attemptedAt >= since);
  const last = run[run.length - 1];
  if (!last) return since ?? delivery.createdAt;
  if (run.length >= ATTEMPTS_PER_RUN) return null;
  return nowIso(Date.parse(last.attemptedAt) + retryDelay(run.length) * 1000);
}
