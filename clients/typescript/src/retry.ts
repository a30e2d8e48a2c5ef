import type { AlmsError } from "./errors.js";

export interface RetryPolicy {
  /** Attempts per call, the first included (default 3; 1 turns retries off). */
  maxAttempts: number;
  /** A Retry-After longer than this is not waited for: the error is thrown at once (default 60). */
  maxRetryAfterSeconds: number;
  /** Random extra wait added to each Retry-After, up to this many ms (default 5000, as the API asks). */
  jitterMs: number;
  /** The first wait after a 500 or a network failure, doubled each time (default 500 ms). */
  backoffMs: number;
}

export const DEFAULT_RETRY: RetryPolicy = { maxAttempts: 3, maxRetryAfterSeconds: 60, jitterMs: 5000, backoffMs: 500 };

/**
 * How long to wait before sending the same request again (same idempotency key), or null when
 * the API says a retry does not help:
 * - 429 (rate limit) and 503 (the queue, the rate-limit or idempotency store, or the service
 *   briefly unavailable): after Retry-After, plus jitter;
 * - 409 `idempotency_key_in_progress`: the first call with this key still runs; after its Retry-After;
 * - 500 `internal_error`: nothing was kept under the key, so it may be sent again, after a backoff;
 * - 502 and 504 (the connected calendar failed or was slow): after a backoff, or Retry-After when named.
 * Anything else (a 4xx is an answer) is not retried.
 */
export function retryDelayMs(error: AlmsError, attempt: number, policy: RetryPolicy, random: () => number) {
  const afterRetryAfter = (fallbackSeconds: number) => {
    const seconds = error.retryAfter ?? fallbackSeconds;
    if (seconds > policy.maxRetryAfterSeconds) return null;
    return seconds * 1000 + Math.floor(random() * policy.jitterMs);
  };
  if (error.status === 429 || error.status === 503) return afterRetryAfter(1);
  if (error.status === 409 && error.code === "idempotency_key_in_progress") return afterRetryAfter(5);
  if (error.status === 500 && error.code === "internal_error") return backoffMs(attempt, policy);
  if (error.status === 502 || error.status === 504)
    return error.retryAfter === null ? backoffMs(attempt, policy) : afterRetryAfter(0);
  return null;
}

/** The wait after failed attempt number `attempt` (1-based) when no Retry-After applies. */
export const backoffMs = (attempt: number, policy: RetryPolicy) => policy.backoffMs * 2 ** Math.min(attempt - 1, 6);
