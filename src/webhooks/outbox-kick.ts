import { errorText, log } from "../lib/log";
import { drainOutbox } from "./outbox-drain";

/** Drains one kick may run back to back, so a steady stream of writes cannot hold an invocation open. */
const KICK_MAX_DRAINS = 4;
/**
 * Drains of one isolate start at least this far apart. Each drain is about 5 D1 queries,
 * one of them the claim's walk over agencies, whatever it finds; under a stream of writes
 * a drain per request would spend more of the one D1 writer than the writes themselves.
 * Spaced, one drain sends what every request of the last interval wrote, for at most this
 * much added delay before an event reaches the queue.
 */
export const DRAIN_SPACING_MS = 100;

/** One drain at a time per isolate: changes that land while one runs (or waits its turn) make it run once more. */
let inFlight: Promise<void> | undefined;
let again = false;
let lastDrainAt = Number.NEGATIVE_INFINITY;
function coalescedDrain(env: Env): Promise<void> {
  if (inFlight) {
    again = true;
    return inFlight;
  }
  inFlight = (async () => {
    let drains = 0;
    do {
      again = false;
      const wait = lastDrainAt + DRAIN_SPACING_MS - Date.now();
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
      lastDrainAt = Date.now();
      await drainOutbox(env);
    } while (again && ++drains < KICK_MAX_DRAINS);
  })().finally(() => {
    inFlight = undefined;
  });
  return inFlight;
}

/** Resolves once this isolate's background drain, if one is running or waiting, has finished. */
export async function backgroundDrainDone(): Promise<void> {
  while (inFlight) await inFlight.catch(() => undefined);
}

/**
 * Sends the outbox's new events to the queue in the background of the current
 * invocation, for any code that wrote events (a request, a queue consumer, a Cron job).
 * Failures are logged only: the every-minute sweep sends whatever this leaves behind.
 */
export function kickOutbox(env: Env, ctx: Pick<ExecutionContext, "waitUntil">): void {
  ctx.waitUntil(
    coalescedDrain(env).catch((err: unknown) =>
      log.error("outbox drain failed", { job: "outbox_drain", error: errorText(err) }),
    ),
  );
}
