/** How long one attempt waits for the receiver's answer. */
export const DELIVERY_TIMEOUT_MS = 10_000;
/** Workers holds at most 6 connections open per invocation; a seventh fetch would wait, its timeout running. */
export const CONNECTIONS_PER_BATCH = 6;
/** Attempts one endpoint may have in flight in a batch; 1 while it is failing (a probe). */
export const ENDPOINT_IN_FLIGHT = 2;
/** Attempts start only this long into a batch; later ones wait for a later batch, so a batch ends within about 15 s. */
const START_WINDOW_MS = 5_000;
/**
 * How long a batch holds the queue: past it, the attempts still running (a slow or hanging
 * receiver's) go on in the background of the invocation while the batch hands its
 * messages back, so the queue's next batch starts at once.
 */
export const BATCH_DEADLINE_MS = 1_000;
/**
 * How long a batch holds the deliveries it leased, from its start: the start window, the
 * timeout of an attempt started at its end, and time to record the outcome.
 */
export const LEASE_MS = START_WINDOW_MS + DELIVERY_TIMEOUT_MS + 15_000;

/** The consumer's time limits; tests shorten them. */
export interface ConsumerLimits {
  timeoutMs: number;
  startWindowMs: number;
  deadlineMs: number;
}
export const LIMITS: ConsumerLimits = {
  timeoutMs: DELIVERY_TIMEOUT_MS,
  startWindowMs: START_WINDOW_MS,
  deadlineMs: BATCH_DEADLINE_MS,
};
