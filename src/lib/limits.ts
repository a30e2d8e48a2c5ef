/** How long a response is kept for replay under its idempotency key. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a request holds its idempotency key. A Worker that dies mid-request frees the key when this lapses. */
export const LOCK_LEASE_MS = 60_000;
