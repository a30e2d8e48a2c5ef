/** Seconds to wait before retrying a transient failure, and after an overload. */
const TRANSIENT_RETRY_AFTER = 2;
const OVERLOADED_RETRY_AFTER = 10;

// What D1 and Durable Objects say when a retry may succeed: a dropped connection, an
// object reset or moved, a storage timeout, a queue of requests too long.
const TRANSIENT_MESSAGES = new RegExp(
  [
    "Network connection lost",
    "overloaded",
    "Too many requests queued",
    "object to be reset",
    "exceeded timeout",
    "Durable Object reset",
    "internal error in D1",
  ].join("|"),
  "i",
);

/**
 * Whether a failure from D1 or a Durable Object is transient, and how long to wait: an
 * overloaded object is given time to drain (Cloudflare advises against quick retries),
 * a retryable error a short pause. Undefined for any other failure.
 */
export function transientFailure(err: unknown): { retryAfter: number } | undefined {
  const seen = new Set<unknown>();
  for (let e = err; e && typeof e === "object" && !seen.has(e); e = (e as { cause?: unknown }).cause) {
    seen.add(e);
    const flags = e as { overloaded?: unknown; retryable?: unknown; message?: unknown };
    if (flags.overloaded === true) return { retryAfter: OVERLOADED_RETRY_AFTER };
    if (flags.retryable === true) return { retryAfter: TRANSIENT_RETRY_AFTER };
    if (typeof flags.message === "string" && TRANSIENT_MESSAGES.test(flags.message)) {
      return {
        retryAfter: /overloaded|Too many requests/i.test(flags.message)
          ? OVERLOADED_RETRY_AFTER
          : TRANSIENT_RETRY_AFTER,
      };
    }
  }
  return undefined;
}

/** Seconds a caller waits after a backend (a key's gate, an idempotency ledger) could not be asked. */
const UNAVAILABLE_RETRY_AFTER = 5;

/**
 * Retry-After for a backend that failed on the request path: an overloaded object is
 * given its longer pause to drain, any other failure (retryable or not) the default.
 */
export const unavailableRetryAfter = (err: unknown): number =>
  Math.max(transientFailure(err)?.retryAfter ?? 0, UNAVAILABLE_RETRY_AFTER);
