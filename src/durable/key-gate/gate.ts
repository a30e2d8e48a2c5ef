import { DurableObject } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { database } from "../../db/client";
import { type ApiKey, type ApiKeySecret, apiKeySecrets, apiKeys, users } from "../../db/schema";
import { type KeyChange, revokeKey, rotateKey, updateKey } from "../../domain/api-keys";
import {
  agencyBudgetFor,
  budgetFor,
  ENDPOINT_NAMES,
  type EndpointName,
  MAX_BUDGET,
  WINDOW_MS,
} from "../../domain/budgets";
import { checkKeyState, type KeyMode, type KeyState } from "../../domain/keys";
import { DomainError, type ErrorCode } from "../../lib/errors";
import { SlidingLog } from "../../lib/sliding-log";
import { agencyBudget, type Returned } from "../budget-lease";
import { tracedCall } from "../traced";

export interface RateDecision {
  limit: number;
  remaining: number;
  /** Epoch seconds when the window has fully refilled. */
  reset: number;
  /** Seconds until a request fits again; set only when refused. */
  retryAfter?: number;
  /** Set when the agency's budget, shared by all its keys, refused the request (the numbers are the agency's). */
  scope?: "agency";
}

export interface Refusal {
  ok: false;
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

export type GateVerdict =
  | {
      ok: true;
      key: Pick<ApiKey, "id" | "agencyId" | "role" | "scopes" | "mintedByUserId">;
      rate?: RateDecision;
      /** The D1 bookmark of the key's latest committed write: its reads start there. */
      bookmark?: string;
    }
  | Refusal;

interface Loaded {
  key: ApiKey;
  minter: KeyState["minter"];
  secrets: Map<string, Pick<ApiKeySecret, "supersededAt" | "deactivatedAt">>;
  /** When the load began (epoch ms). */
  at: number;
}

/**
 * Cached state older than this is read again. Every change reaches the gate at once
 * (`apply`, `reload`); this only bounds how long a change whose notice was lost (a
 * Worker that died between its D1 write and the notice) could go unseen.
 */
const KEY_STATE_MAX_AGE_MS = 60_000;
/** Loads in a row that a change may overtake before the gate gives up (503, retried by the client). */
const LOAD_ATTEMPTS = 3;
/**
 * Admitted requests are written as per-second counts at most this long after they were
 * counted: a restart of the object forgets at most the requests of the last interval.
 */
export const WINDOW_FLUSH_MS = 1_000;
/**
 * How long a lease of the agency's budget lasts: a gate asks for as many requests as its
 * key sent in the last lease period, and gives back what is left when the lease ends.
 */
export const LEASE_MS = 5_000;
/**
 * Renewals one request may wait for before the gate gives up (503): each grants at least
 * one request and asks for every request then waiting, so a request outrun this often
 * means the agency's object is not keeping up.
 */
const LEASE_ATTEMPTS = 32;

interface Lease {
  id: string;
  agencyId: string;
  left: number;
  /** In the clock of the requests that took it (epoch ms). */
  expires: number;
}

/** Longer bookmarks are refused; D1's are far shorter. */
const BOOKMARK_MAX_LENGTH = 1_024;

/**
 * One per API key (addressed by key id). It holds the key's mutable state, an exact
 * 60-second sliding window per endpoint name (in memory, written as per-second counts
 * every WINDOW_FLUSH_MS) and the bookmark of the key's latest write, so a request is
 * authenticated, rate-limited and told where its reads start in one round trip. Every
 * change to the key, and to the user who minted it, ends the cached state and bumps the
 * generation; a load that was under way when the generation moved is thrown away, so no
 * decision is ever taken on state read before a change.
 */
export class KeyGate extends DurableObject<Env> {
  #loaded: Loaded | undefined;
  #generation = 0;
  #windows = new Map<string, SlidingLog>();
  /** Admitted requests not written yet: endpoint → epoch second → count. */
  #pending = new Map<string, Map<number, number>>();
  #flushing: ReturnType<typeof setTimeout> | undefined;
  #bookmark: string | undefined;
  /** Requests leased from the agency's budget, per endpoint. */
  #leases = new Map<string, Lease>();
  #renewing = new Map<string, Promise<RateDecision | undefined>>();
  /** Requests of the key waiting for a renewal, per endpoint: the renewal asks for them all. */
  #waiting = new Map<string, number>();
  #returning: ReturnType<typeof setTimeout> | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec(
        "CREATE TABLE IF NOT EXISTS window_counts " +
          "(endpoint TEXT NOT NULL, second INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (endpoint, second))",
      );
      sql.exec("CREATE TABLE IF NOT EXISTS gate_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)");
      const since = Date.now() - WINDOW_MS;
      // The per-request log of earlier versions, folded into per-second counts once.
      if (sql.exec("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'hits'").toArray().length) {
        sql.exec(
          "INSERT INTO window_counts (endpoint, second, n) " +
            "SELECT endpoint, at / 1000, count(*) FROM hits WHERE at > ? GROUP BY endpoint, at / 1000 " +
            "ON CONFLICT (endpoint, second) DO UPDATE SET n = n + excluded.n",
          since,
        );
        sql.exec("DROP TABLE hits");
      }
      sql.exec("DELETE FROM window_counts WHERE second < ?", Math.floor(since / 1000));
      for (const row of sql.exec<{ endpoint: string; second: number; n: number }>(
        "SELECT endpoint, second, n FROM window_counts ORDER BY second",
      )) {
        // Counted at the end of their second: a restored request leaves the window at most 1 s late.
        const at = row.second * 1000 + 999;
        if (at <= since) continue;
        const window = this.#window(row.endpoint);
        for (let i = 0; i < Math.min(row.n, MAX_BUDGET); i++) window.push(at);
      }
      this.#bookmark = sql
        .exec<{ value: string }>("SELECT value FROM gate_meta WHERE name = 'bookmark'")
        .toArray()[0]?.value;
    });
  }

  async #load(keyId: string): Promise<Loaded | undefined> {
    for (let attempt = 0; attempt < LOAD_ATTEMPTS; attempt++) {
      const cached = this.#loaded;
      if (cached && Date.now() - cached.at < KEY_STATE_MAX_AGE_MS) return cached;
      const generation = this.#generation;
      const at = Date.now();
      const db = database(this.env.DB);
      const [row, secrets] = await Promise.all([
        db
          .select({
            key: apiKeys,
            minter: { isActive: users.isActive, agencyId: users.agencyId, role: users.role },
          })
          .from(apiKeys)
          .leftJoin(users, eq(users.id, apiKeys.mintedByUserId))
          .where(eq(apiKeys.id, keyId))
          .get(),
        db.select().from(apiKeySecrets).where(eq(apiKeySecrets.keyId, keyId)).all(),
      ]);
      // A change landed while this load ran: what it read may predate the change.
      if (generation !== this.#generation) continue;
      if (!row) return undefined;
      this.#loaded = {
        key: row.key,
        minter: row.minter,
        secrets: new Map(
          secrets.map((s) => [s.hash, { supersededAt: s.supersededAt, deactivatedAt: s.deactivatedAt }]),
        ),
        at,
      };
      return this.#loaded;
    }
    throw new Error("the key changed during every load");
  }

  /** Ends the cached state and any load under way; the next request reads the key afresh. */
  #invalidate(): void {
    this.#generation++;
    this.#loaded = undefined;
  }

  /** A change made elsewhere (the minting user's state, the rotation sweep): read the key afresh. */
  async reload(): Promise<void> {
    this.#invalidate();
  }

  /**
   * Every change to a key runs here, in the key's own gate: the D1 write and the end of
   * the cached state happen in one place, so no request after the change sees the old
   * state, even if the caller goes away halfway.
   */
  async apply(keyId: string, change: KeyChange): Promise<{ ok: true; key: ApiKey; secret?: string } | Refusal> {
    const db = database(this.env.DB);
    this.#invalidate();
    try {
      switch (change.op) {
        case "rotate":
          return { ok: true, ...(await rotateKey(db, keyId)) };
        case "revoke":
          return { ok: true, key: await revokeKey(db, keyId) };
        case "update":
          return { ok: true, key: await updateKey(db, keyId, change.patch, change.agencyId) };
      }
    } catch (err) {
      // Errors cross the RPC boundary as plain Errors; refusals travel as data.
      if (err instanceof DomainError) return refuse(err);
      throw err;
    } finally {
      this.#invalidate();
    }
  }

  /**
   * Authenticates the presented secret (by hash) and, for a rate-limited route, counts
   * the request against the key's window for `endpoint`. With `counted` false (a
   * conditional read, counted by `count` only when it is not answered 304) the window is
   * reported as it stands, counting nothing.
   */
  async admit(
    keyId: string,
    secretHash: string,
    environmentMode: KeyMode,
    endpoint: EndpointName | null,
    now = Date.now(),
    traceparent?: string,
    counted = true,
  ): Promise<GateVerdict> {
    const verdict = await this.#admit(keyId, secretHash, environmentMode, endpoint, now, counted);
    tracedCall(traceparent, "key gate admit", () => ({
      key_id: keyId,
      endpoint,
      admitted: verdict.ok,
      error_code: verdict.ok ? null : verdict.code,
      rate_remaining: verdict.ok ? (verdict.rate?.remaining ?? null) : null,
    }));
    return verdict;
  }

  async #admit(
    keyId: string,
    secretHash: string,
    environmentMode: KeyMode,
    endpoint: EndpointName | null,
    now: number,
    counted: boolean,
  ): Promise<GateVerdict> {
    const loaded = await this.#load(keyId);
    const secret = loaded?.secrets.get(secretHash);
    if (!loaded || !secret) return refuse(new DomainError("api_key_invalid"));
    try {
      checkKeyState({ ...loaded.key, secret, minter: loaded.minter }, now, environmentMode);
    } catch (err) {
      if (err instanceof DomainError) return refuse(err);
      throw err;
    }
    const { id, agencyId, role, scopes, mintedByUserId } = loaded.key;
    const key = { id, agencyId, role, scopes, mintedByUserId };
    const bookmark = this.#bookmark;
    if (!endpoint) return { ok: true, key, bookmark };
    const limit = budgetFor(endpoint, loaded.key.rateLimitOverrides);
    if (limit === undefined) return refuse(new DomainError("rate_limit_misconfigured", { details: { endpoint } }));
    if (!counted) return { ok: true, key, rate: this.#peek(endpoint, limit, now), bookmark };
    return { ok: true, key, rate: await this.#admitCounted(agencyId, endpoint, limit, now), bookmark };
  }

  /**
   * Counts a request that `admit` authenticated without counting (a conditional read not
   * answered 304), as `admit` would have counted it. Undefined when the key is unknown or
   * the endpoint has no budget.
   */
  async count(
    keyId: string,
    endpoint: EndpointName,
    now = Date.now(),
    traceparent?: string,
  ): Promise<RateDecision | undefined> {
    const loaded = await this.#load(keyId);
    const limit = loaded && budgetFor(endpoint, loaded.key.rateLimitOverrides);
    const rate = limit === undefined ? undefined : await this.#admitCounted(loaded!.key.agencyId, endpoint, limit, now);
    tracedCall(traceparent, "key gate count", () => ({
      key_id: keyId,
      endpoint,
      rate_remaining: rate?.remaining ?? null,
    }));
    return rate;
  }

  /** The key's window for `endpoint` as it stands, counting nothing. */
  #peek(endpoint: EndpointName, limit: number, now: number): RateDecision {
    const window = this.#window(endpoint);
    window.evict(now - WINDOW_MS);
    const newest = window.newest();
    return {
      limit,
      remaining: Math.max(0, limit - window.size),
      reset: Math.ceil(((newest ?? now - WINDOW_MS) + WINDOW_MS) / 1000),
    };
  }

  /**
   * Counts the request in the key's window and in the agency's, through the key's lease
   * of the agency's budget: the key's own budget first (a request it refuses costs the
   * agency's nothing), then a request of the lease, renewed when it is spent or over.
   * Concurrent requests of the key wait for one renewal, which asks for all of them.
   */
  async #admitCounted(agencyId: string, endpoint: EndpointName, limit: number, now: number): Promise<RateDecision> {
    const window = this.#window(endpoint);
    for (let attempt = 0; attempt < LEASE_ATTEMPTS; attempt++) {
      window.evict(now - WINDOW_MS);
      if (window.size >= limit) return this.#hit(endpoint, limit, now);
      const lease = this.#leases.get(endpoint);
      if (lease && lease.agencyId === agencyId && lease.left > 0 && now < lease.expires) {
        lease.left--;
        return this.#hit(endpoint, limit, now);
      }
      let renewal = this.#renewing.get(endpoint);
      if (!renewal) {
        renewal = this.#renew(agencyId, endpoint, limit, now).finally(() => this.#renewing.delete(endpoint));
        this.#renewing.set(endpoint, renewal);
      }
      this.#waiting.set(endpoint, (this.#waiting.get(endpoint) ?? 0) + 1);
      try {
        const refusal = await renewal;
        if (refusal) return refusal;
      } finally {
        this.#waiting.set(endpoint, (this.#waiting.get(endpoint) ?? 1) - 1);
      }
    }
    throw new Error("the agency's budget could not be leased");
  }

  async #renew(agencyId: string, endpoint: EndpointName, keyLimit: number, now: number) {
    const old = this.#leases.get(endpoint);
    this.#leases.delete(endpoint);
    const returning: Returned[] = old && old.left > 0 && old.agencyId === agencyId ? [leaseReturn(old)] : [];
    const window = this.#window(endpoint);
    // As many as the key sent in the last lease period, or has waiting now, never more than its own budget has left.
    const demand = Math.max(window.countSince(now - LEASE_MS) + 1, this.#waiting.get(endpoint) ?? 0);
    const want = Math.max(1, Math.min(demand, keyLimit - window.size));
    const answer = await agencyBudget(this.env, agencyId).lease(
      { endpoint, want, ceiling: agencyBudgetFor(endpoint, keyLimit), returning },
      now,
    );
    if (!answer.ok) {
      const { limit, remaining, reset, retryAfter } = answer;
      return { limit, remaining, reset, retryAfter, scope: "agency" as const };
    }
    this.#leases.set(endpoint, { id: answer.id, agencyId, left: answer.granted, expires: now + LEASE_MS });
    this.#returning ??= setTimeout(() => this.#returnUnused(), LEASE_MS);
    return undefined;
  }

  /** Gives the agency back what ended leases left unused, so other keys may send it. */
  #returnUnused(): void {
    this.#returning = undefined;
    const now = Date.now();
    for (const [endpoint, lease] of this.#leases) {
      if (now < lease.expires) continue;
      this.#leases.delete(endpoint);
      if (lease.left <= 0) continue;
      // Best effort: what is not given back leaves the agency's window with the lease's minute.
      void agencyBudget(this.env, lease.agencyId)
        .giveBack(endpoint as EndpointName, [leaseReturn(lease)])
        .catch(() => undefined);
    }
    if (this.#leases.size) this.#returning = setTimeout(() => this.#returnUnused(), LEASE_MS);
  }

  /**
   * Keeps the bookmark of a committed write of this key, so its next reads, from any
   * isolate, start at least there. Bookmarks order as strings; the latest one stays.
   */
  async wrote(bookmark: string, traceparent?: string): Promise<void> {
    tracedCall(traceparent, "key gate bookmark", () => ({}));
    if (typeof bookmark !== "string" || !bookmark || bookmark.length > BOOKMARK_MAX_LENGTH) return;
    if (this.#bookmark !== undefined && bookmark <= this.#bookmark) return;
    this.#bookmark = bookmark;
    this.ctx.storage.sql.exec(
      "INSERT INTO gate_meta (name, value) VALUES ('bookmark', ?) " +
        "ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      bookmark,
    );
  }

  /**
   * Every budget of the key with what is left of its window now, counting nothing: the
   * key's own report of its rate limits. Undefined when the key is unknown.
   */
  async windows(keyId: string, now = Date.now()): Promise<Record<EndpointName, RateDecision> | undefined> {
    const loaded = await this.#load(keyId);
    if (!loaded) return undefined;
    const report = {} as Record<EndpointName, RateDecision>;
    for (const endpoint of ENDPOINT_NAMES) {
      const limit = budgetFor(endpoint, loaded.key.rateLimitOverrides);
      if (limit === undefined) continue;
      const window = this.#windows.get(endpoint);
      window?.evict(now - WINDOW_MS);
      const newest = window?.newest();
      report[endpoint] = {
        limit,
        remaining: Math.max(0, limit - (window?.size ?? 0)),
        // As on an admitted request: the window has fully refilled a window after its newest request.
        reset: Math.ceil(((newest ?? now - WINDOW_MS) + WINDOW_MS) / 1000),
      };
    }
    return report;
  }

  /** Counts a request of a caller that is not a key (a dashboard session) against its window. */
  async hit(endpoint: EndpointName, now = Date.now()): Promise<RateDecision | { misconfigured: true }> {
    const limit = budgetFor(endpoint, {});
    return limit === undefined ? { misconfigured: true } : this.#hit(endpoint, limit, now);
  }

  #window(endpoint: string): SlidingLog {
    let window = this.#windows.get(endpoint);
    if (!window) {
      window = new SlidingLog();
      this.#windows.set(endpoint, window);
    }
    return window;
  }

  #hit(endpoint: string, limit: number, now: number): RateDecision {
    const window = this.#window(endpoint);
    window.evict(now - WINDOW_MS);
    const count = window.size;
    if (count >= limit) {
      // The oldest request still counted leaves the window first.
      const frees = window.at(count - limit)! + WINDOW_MS;
      return {
        limit,
        remaining: 0,
        reset: Math.ceil((window.newest()! + WINDOW_MS) / 1000),
        retryAfter: Math.max(1, Math.ceil((frees - now) / 1000)),
      };
    }
    window.push(now);
    this.#count(endpoint, now);
    return { limit, remaining: limit - count - 1, reset: Math.ceil((now + WINDOW_MS) / 1000) };
  }

  /** Notes an admitted request for the next coalesced write. */
  #count(endpoint: string, now: number): void {
    const second = Math.floor(now / 1000);
    let seconds = this.#pending.get(endpoint);
    if (!seconds) {
      seconds = new Map();
      this.#pending.set(endpoint, seconds);
    }
    seconds.set(second, (seconds.get(second) ?? 0) + 1);
    this.#flushing ??= setTimeout(() => this.#flush(), WINDOW_FLUSH_MS);
  }

  /** Writes the counts gathered since the last write, one statement per endpoint and second. */
  #flush(): void {
    this.#flushing = undefined;
    const pending = this.#pending;
    this.#pending = new Map();
    const sql = this.ctx.storage.sql;
    for (const [endpoint, seconds] of pending) {
      for (const [second, n] of seconds) {
        sql.exec(
          "INSERT INTO window_counts (endpoint, second, n) VALUES (?, ?, ?) " +
            "ON CONFLICT (endpoint, second) DO UPDATE SET n = n + excluded.n",
          endpoint,
          second,
          n,
        );
      }
    }
    sql.exec("DELETE FROM window_counts WHERE second < ?", Math.floor((Date.now() - WINDOW_MS) / 1000));
  }
}

const leaseReturn = (lease: Lease): Returned => ({ id: lease.id, unused: lease.left });

function refuse(err: DomainError): Refusal {
  return { ok: false, code: err.code, message: err.message, details: err.details };
}
