import { DurableObject } from "cloudflare:workers";
import { and, eq, inArray } from "drizzle-orm";
import { database } from "../db/client";
import { idempotencyMarks } from "../db/schema";
import { agencyShard } from "../db/shards";
import { IDEMPOTENCY_SWEEP_PAGE, IDEMPOTENCY_TTL_MS, LEDGER_ANSWER_BYTES, LOCK_LEASE_MS } from "../lib/limits";
import { createLedgerTables, keptAnswerBytes } from "./ledger-tables";
import { tracedCall } from "./traced";

export interface CachedResponse {
  status: number;
  headers: [string, string][];
  /** Sealed by the idempotency guard before it is handed here: never stored in plaintext. */
  body: string;
}

export type Begin =
  | { state: "replay"; response: CachedResponse }
  | { state: "conflict" }
  | { state: "in_progress" }
  /** The object keeps `limit` bytes of answers already (`used`): no new key until some expire. */
  | { state: "full"; limit: number; used: number }
  /** `recovering`: an earlier attempt with this key ended without a cached answer; it may have committed. */
  | { state: "acquired"; token: string; recovering: boolean };

/** The request holding a key: what `complete`, `release` and `discard` are called with. */
export interface Lease {
  agencyId: string;
  idempotencyKey: string;
  token: string;
}

/** One ledger row: an (agency, idempotency key) with its lease and, once answered, the response. */
export type LedgerEntry = {
  agency_id: string;
  idem_key: string;
  request_hash: string;
  expires_at: number;
  lease_token: string | null;
  lease_until: number | null;
  status: number | null;
  /** JSON of the replayed `[name, value]` headers. */
  headers: string | null;
  body: string | null;
};

/** The row a lease holds, and its bound values (`leaseOf`). */
const LEASE_MATCH = "agency_id = ? AND idem_key = ? AND lease_token = ?";
const leaseOf = (lease: Lease) => [lease.agencyId, lease.idempotencyKey, lease.token] as const;

/** How long a duplicate waits for the request holding its key before it is answered 409 in progress. */
const IN_PROGRESS_WAIT_MS = 250;

// Each D1 statement that forgets commit marks binds the agency and at most this many keys (≤ 100 parameters).
const MARKS_PER_STATEMENT = 90;

/**
 * An agency's idempotency keys (those of one shard, see `ledgerName` in the idempotency
 * guard), one SQLite row per key: the request
 * hash, the in-progress lease and, for 24 hours, the complete response (its body sealed).
 * An alarm set to the earliest expiry forgets expired rows, and their D1 commit marks, a
 * page at a time. The request hash names the record's owner, so another owner's request is a
 * conflict, never a replay.
 */
export class IdempotencyLedger extends DurableObject<Env> {
  /** Keys whose D1 commit marks are being forgotten: not to be taken until that is done. */
  readonly #forgetting = new Set<string>();
  /** Duplicates waiting for a key's lease to settle, by key. */
  readonly #waiting = new Map<string, (() => void)[]>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    createLedgerTables(ctx.storage.sql);
  }

  async begin(
    agencyId: string,
    key: string,
    requestHash: string,
    now = Date.now(),
    traceparent?: string,
  ): Promise<Begin> {
    const begun = await this.#begin(agencyId, key, requestHash, now);
    tracedCall(traceparent, "idempotency ledger begin", () => ({ agency_id: agencyId, state: begun.state }));
    return begun;
  }

  async #begin(agencyId: string, key: string, requestHash: string, now: number): Promise<Begin> {
    let entry = this.#entry(agencyId, key);
    if (entry && entry.expires_at <= now) {
      if (this.#forgetting.has(forgetKey(agencyId, key))) return { state: "in_progress" };
      await this.#forget(agencyId, [key], now);
      entry = this.#entry(agencyId, key);
    }
    if (entry?.status != null)
      return entry.request_hash === requestHash
        ? {
            state: "replay",
            response: { status: entry.status, headers: JSON.parse(entry.headers ?? "[]"), body: entry.body ?? "" },
          }
        : { state: "conflict" };
    if (entry && entry.request_hash !== requestHash) return { state: "conflict" };
    if (entry?.lease_until != null && entry.lease_until > now) {
      // The holder may have answered already, its `complete` still on its way: wait for it a moment.
      if (await this.#settled(agencyId, key)) return this.#begin(agencyId, key, requestHash, now);
      return { state: "in_progress" };
    }
    if (!entry) {
      const used = keptAnswerBytes(this.ctx.storage.sql);
      if (used >= LEDGER_ANSWER_BYTES) return { state: "full", limit: LEDGER_ANSWER_BYTES, used };
    }
    const token = crypto.randomUUID();
    const expiresAt = entry?.expires_at ?? now + IDEMPOTENCY_TTL_MS;
    this.ctx.storage.sql.exec(
      "INSERT INTO entries (agency_id, idem_key, request_hash, expires_at, lease_token, lease_until) " +
        "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (agency_id, idem_key) DO UPDATE SET " +
        "lease_token = excluded.lease_token, lease_until = excluded.lease_until",
      agencyId,
      key,
      requestHash,
      expiresAt,
      token,
      now + LOCK_LEASE_MS,
    );
    if (!entry) {
      const alarm = await this.ctx.storage.getAlarm();
      if (alarm === null || alarm > expiresAt) await this.ctx.storage.setAlarm(expiresAt);
    }
    return { state: "acquired", token, recovering: entry !== undefined };
  }

  /**
   * Resolves true once the key's lease is settled (completed, released or discarded), or
   * false after IN_PROGRESS_WAIT_MS: a duplicate of a request still running is 409.
   */
  #settled(agencyId: string, key: string): Promise<boolean> {
    const name = forgetKey(agencyId, key);
    let waiters = this.#waiting.get(name);
    if (!waiters) {
      waiters = [];
      this.#waiting.set(name, waiters);
    }
    const list = waiters;
    return new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        const i = list.indexOf(done);
        if (i >= 0) list.splice(i, 1);
        if (!list.length && this.#waiting.get(name) === list) this.#waiting.delete(name);
        resolve(false);
      }, IN_PROGRESS_WAIT_MS);
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      list.push(done);
    });
  }

  /** Wakes the waiting duplicates once this call's write is done (it is synchronous, so on the next turn). */
  #wakeAfter(lease: Lease): void {
    queueMicrotask(() => this.#wake(lease));
  }

  /** Wakes the duplicates waiting for the key's lease to settle. */
  #wake(lease: Lease): void {
    const name = forgetKey(lease.agencyId, lease.idempotencyKey);
    const waiters = this.#waiting.get(name);
    if (!waiters) return;
    this.#waiting.delete(name);
    for (const done of waiters) done();
  }

  /** Caches the answer of the request holding the lease and frees the key. */
  async complete(lease: Lease, response: CachedResponse, traceparent?: string): Promise<boolean> {
    tracedCall(traceparent, "idempotency ledger complete", () => ({
      agency_id: lease.agencyId,
      status: response.status,
    }));
    this.#wakeAfter(lease);
    const cursor = this.ctx.storage.sql.exec(
      "UPDATE entries SET lease_token = NULL, lease_until = NULL, status = ?, headers = ?, body = ? " +
        `WHERE ${LEASE_MATCH}`,
      response.status,
      JSON.stringify(response.headers),
      response.body,
      ...leaseOf(lease),
    );
    return cursor.rowsWritten > 0;
  }

  /** Frees the key without caching (a 5xx): the same request may be retried. */
  async release(lease: Lease): Promise<void> {
    this.#wakeAfter(lease);
    this.ctx.storage.sql.exec(
      `UPDATE entries SET lease_token = NULL, lease_until = NULL WHERE ${LEASE_MATCH}`,
      ...leaseOf(lease),
    );
  }

  /**
   * Forgets the entry taken by the request holding the lease, which found that the key's
   * commit mark belongs to another request: the entry it wrote names the wrong request,
   * and the next call (the owner's) must start afresh and be answered from the mark.
   */
  async discard(lease: Lease): Promise<void> {
    this.#wakeAfter(lease);
    this.ctx.storage.sql.exec(`DELETE FROM entries WHERE ${LEASE_MATCH}`, ...leaseOf(lease));
  }

  /** Forgets one page of expired entries with their commit marks, then re-arms for what remains. */
  async alarm(): Promise<void> {
    const now = Date.now();
    const expired = this.ctx.storage.sql
      .exec<{ agency_id: string; idem_key: string }>(
        "SELECT agency_id, idem_key FROM entries WHERE expires_at <= ? ORDER BY expires_at LIMIT ?",
        now,
        IDEMPOTENCY_SWEEP_PAGE,
      )
      .toArray();
    const byAgency = new Map<string, string[]>();
    for (const row of expired) {
      // A begin already forgetting this key deletes its mark; a second delete could land after the next request's.
      if (this.#forgetting.has(forgetKey(row.agency_id, row.idem_key))) continue;
      const keys = byAgency.get(row.agency_id);
      if (keys) keys.push(row.idem_key);
      else byAgency.set(row.agency_id, [row.idem_key]);
    }
    for (const [agencyId, keys] of byAgency) await this.#forget(agencyId, keys, now);
    const next = this.ctx.storage.sql
      .exec<{ expires_at: number }>("SELECT expires_at FROM entries ORDER BY expires_at LIMIT 1")
      .toArray()[0];
    if (next) await this.ctx.storage.setAlarm(Math.max(next.expires_at, Date.now()));
  }

  #entry(agencyId: string, key: string): LedgerEntry | undefined {
    return this.ctx.storage.sql
      .exec<LedgerEntry>("SELECT * FROM entries WHERE agency_id = ? AND idem_key = ?", agencyId, key)
      .toArray()[0];
  }

  /**
   * Deletes the keys' D1 commit marks, then their entries if still expired at `now`.
   * While the marks are being deleted the keys are not taken, so no request's fresh mark
   * can be deleted by a delete sent before it.
   */
  async #forget(agencyId: string, keys: string[], now: number): Promise<void> {
    const names = keys.map((key) => forgetKey(agencyId, key));
    for (const name of names) this.#forgetting.add(name);
    try {
      // The marks live with the agency's other rows, on its shard.
      const db = (await agencyShard(this.env, agencyId))?.db ?? database(this.env.DB);
      const statements = [];
      for (let i = 0; i < keys.length; i += MARKS_PER_STATEMENT) {
        const page = keys.slice(i, i + MARKS_PER_STATEMENT);
        statements.push(
          db
            .delete(idempotencyMarks)
            .where(and(eq(idempotencyMarks.agencyId, agencyId), inArray(idempotencyMarks.idemKey, page))),
        );
      }
      const [first, ...rest] = statements;
      if (first) await db.batch([first, ...rest]);
    } finally {
      for (const name of names) this.#forgetting.delete(name);
    }
    for (const key of keys) {
      this.ctx.storage.sql.exec(
        "DELETE FROM entries WHERE agency_id = ? AND idem_key = ? AND expires_at <= ?",
        agencyId,
        key,
        now,
      );
    }
  }
}

const forgetKey = (agencyId: string, key: string) => `${agencyId}\n${key}`;
