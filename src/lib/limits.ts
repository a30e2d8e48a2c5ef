/** How long a response is kept for replay under its idempotency key. */
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;
/** How long a request holds its idempotency key. A Worker that dies mid-request frees the key when this lapses. */
export const LOCK_LEASE_MS = 60_000;
/**
 * How many ledger objects an agency's idempotency keys are spread over (by a hash of
 * the key). A Durable Object takes about 500 writes/s and an idempotent request costs its
 * ledger two (begin, then complete), so one object answers about 250 requests/s. All the
 * agencies' changes meet in D1's single writer, about 1,000 small queries/s, which is some
 * 300 creates/s (three statements each): 8 objects (about 2,000 requests/s) keep the ledger
 * well clear of that ceiling even when the hash spreads keys unevenly, while an agency
 * never has more than 8 objects, each with at most one alarm.
 */
export const IDEMPOTENCY_SHARDS = 8;
/**
 * Bytes of answers one ledger object keeps for replay (its headers and sealed bodies). At
 * it, the object takes no new key until answers expire: the agency's new writes on that
 * object are 409 `agency_quota_exceeded`, while replays and keys already taken go on. With
 * IDEMPOTENCY_SHARDS objects an agency keeps at most 8 GiB for 24 hours, and an object stays
 * at a tenth of a Durable Object's 10 GB of storage. An agency writing 1,000 typical answers
 * (2 KB) a minute all day keeps about 360 MB in each.
 */
export const LEDGER_ANSWER_BYTES = 1024 * 1024 * 1024;
/** Ledger entries the expiry alarm forgets per run; a larger backlog is swept over several runs. */
export const IDEMPOTENCY_SWEEP_PAGE = 200;
