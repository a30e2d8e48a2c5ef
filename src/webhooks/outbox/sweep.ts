import { type Drained, drainOutbox } from "./drain";

/**
 * Drains one Cron invocation runs at most: 40 pages, 2,000 events at most, and about
 * 6 D1 queries and 8 sendBatch calls each, far inside one invocation's limits.
 */
const SWEEP_MAX_DRAINS = 40;

/**
 * The Cron sweeper: drains until nothing is left to claim (or the per-run bound is
 * reached), so a backlog larger than one page does not wait a minute per page.
 */
export async function sweepOutbox(env: Env): Promise<Drained> {
  const total = { events: 0, full: false, messages: 0, failed: 0 };
  for (let i = 0; i < SWEEP_MAX_DRAINS; i++) {
    const drained = await drainOutbox(env);
    total.events += drained.events;
    total.messages += drained.messages;
    total.failed += drained.failed;
    total.full = drained.full;
    if (!drained.events) break;
  }
  return total;
}
