import { type ShardName, shardOfEnv } from "../../db/shards";
import { Coalescer } from "../../lib/coalescer";
import { errorText, log, logFailure } from "../../lib/telemetry/log";
import { inRun } from "../../lib/telemetry/run-event";
import type { MediaJob } from "../../media/jobs";
import { drainOutbox } from "./drain";

/**
 * Drains one kick may run back to back while each finds a full page: a burst is sent within
 * the invocation, yet a steady stream of writes cannot hold one invocation open (each runs
 * only the drain that covers its own change; a kick during another's drain runs the next).
 */
const KICK_MAX_DRAINS = 8;
/**
 * Drains of one isolate start at least this far apart. Each drain is about 5 D1 queries,
 * one of them the claim's walk over agencies, whatever it finds; under a stream of writes
 * a drain per request would spend more of the one D1 writer than the writes themselves.
 * Spaced, one drain sends what every request of the last interval wrote, for at most this
 * much added delay before an event reaches the queue.
 */
export const DRAIN_SPACING_MS = 100;

/** One drain, with its wide event; its messages carry their events' own traces. */
const drainRun = (env: Env) => inRun({ job: "outbox_drain", environment: env.ENVIRONMENT }, () => drainOutbox(env));

/** One drain at a time per isolate and shard, with the environment of that shard's latest kick. */
interface ShardDrains {
  env: Env;
  drains: Coalescer;
}
const byShard = new Map<ShardName, ShardDrains>();

function drainsOf(env: Env): ShardDrains {
  const shard = shardOfEnv(env);
  const entry = byShard.get(shard);
  if (entry) {
    entry.env = env;
    return entry;
  }
  const made: ShardDrains = {
    env,
    drains: new Coalescer(async () => (await drainRun(made.env)).full, {
      spacingMs: DRAIN_SPACING_MS,
      maxRuns: KICK_MAX_DRAINS,
      onError: (err) => logFailure("outbox drain failed", { job: "outbox_drain" }, err),
      // A burst larger than one kick's drains continues in the media queue's next batch, which
      // drains the outbox after its messages: no event waits for a later write or the sweep.
      onBound: async () => {
        try {
          await made.env.MEDIA_QUEUE.send({ kind: "outbox.drain" } satisfies MediaJob);
        } catch (err) {
          log.error("outbox drain hand-off failed", { job: "outbox_drain", error: errorText(err) });
        }
      },
    }),
  };
  byShard.set(shard, made);
  return made;
}

/** Resolves once this isolate's background drain, if one is running or waiting, has finished. */
export async function backgroundDrainDone(): Promise<void> {
  await Promise.all([...byShard.values()].map((d) => d.drains.idle()));
}

/**
 * Sends the outbox's new events to the queue in the background of the current
 * invocation, for any code that wrote events (a request, a queue consumer, a Cron job):
 * the invocation lives until a drain that began after this call has finished. A failed
 * drain is logged; the every-minute sweep sends whatever it left behind. The promise
 * returned resolves with that drain, for a caller that must not finish before it (a queue
 * batch, whose messages are settled when its handler returns).
 */
export function kickOutbox(env: Env, ctx: Pick<ExecutionContext, "waitUntil">): Promise<void> {
  const drained = drainsOf(env).drains.demand();
  ctx.waitUntil(drained);
  return drained;
}
