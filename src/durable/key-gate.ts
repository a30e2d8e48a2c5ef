import { DurableObject } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { database } from "../db/client";
import { type ApiKey, type ApiKeySecret, apiKeySecrets, apiKeys, users } from "../db/schema";
import { type KeyChange, revokeKey, rotateKey, updateKey } from "../domain/api-keys";
import { budgetFor, type EndpointName, WINDOW_MS } from "../domain/budgets";
import { checkKeyState, type KeyMode, type KeyState } from "../domain/keys";
import { DomainError, type ErrorCode } from "../lib/errors";

export interface RateDecision {
  limit: number;
  remaining: number;
  /** Epoch seconds when the window has fully refilled. */
  reset: number;
  /** Seconds until a request fits again; set only when refused. */
  retryAfter?: number;
}

export interface Refusal {
  ok: false;
  code: ErrorCode;
  message: string;
  details: Record<string, unknown>;
}

export type GateVerdict =
  | { ok: true; key: Pick<ApiKey, "id" | "agencyId" | "role" | "scopes" | "mintedByUserId">; rate?: RateDecision }
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
export const KEY_STATE_MAX_AGE_MS = 60_000;
/** Loads in a row that a change may overtake before the gate gives up (503, retried by the client). */
const LOAD_ATTEMPTS = 3;

/**
 * One per API key (addressed by key id). It holds the key's mutable state and an exact
 * 60-second sliding window per endpoint name, so a request is authenticated and
 * rate-limited in one round trip. Every change to the key, and to the user who minted
 * it, ends the cached state and bumps the generation; a load that was under way when
 * the generation moved is thrown away, so no decision is ever taken on state read
 * before a change.
 */
export class KeyGate extends DurableObject<Env> {
  #loaded: Loaded | undefined;
  #generation = 0;
  #windows = new Map<string, number[]>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      ctx.storage.sql.exec("CREATE TABLE IF NOT EXISTS hits (endpoint TEXT NOT NULL, at INTEGER NOT NULL)");
      ctx.storage.sql.exec("CREATE INDEX IF NOT EXISTS hits_endpoint_at ON hits (endpoint, at)");
      const since = Date.now() - WINDOW_MS;
      ctx.storage.sql.exec("DELETE FROM hits WHERE at <= ?", since);
      for (const row of ctx.storage.sql.exec<{ endpoint: string; at: number }>(
        "SELECT endpoint, at FROM hits ORDER BY at",
      )) {
        const list = this.#windows.get(row.endpoint) ?? [];
        list.push(row.at);
        this.#windows.set(row.endpoint, list);
      }
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
          return { ok: true, key: await updateKey(db, keyId, change.patch) };
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
   * the request against the key's window for `endpoint`.
   */
  async admit(
    keyId: string,
    secretHash: string,
    environmentMode: KeyMode,
    endpoint: EndpointName | null,
    now = Date.now(),
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
    if (!endpoint) return { ok: true, key: { id, agencyId, role, scopes, mintedByUserId } };
    const limit = budgetFor(endpoint, loaded.key.rateLimitOverrides);
    if (limit === undefined) return refuse(new DomainError("rate_limit_misconfigured", { details: { endpoint } }));
    return { ok: true, key: { id, agencyId, role, scopes, mintedByUserId }, rate: this.#hit(endpoint, limit, now) };
  }

  /** Counts a request of a caller that is not a key (a dashboard session) against its window. */
  async hit(endpoint: EndpointName, now = Date.now()): Promise<RateDecision | { misconfigured: true }> {
    const limit = budgetFor(endpoint, {});
    return limit === undefined ? { misconfigured: true } : this.#hit(endpoint, limit, now);
  }

  #hit(endpoint: string, limit: number, now: number): RateDecision {
    const since = now - WINDOW_MS;
    const window = (this.#windows.get(endpoint) ?? []).filter((at) => at > since);
    this.#windows.set(endpoint, window);
    if (window.length >= limit) {
      // The oldest request still counted leaves the window first.
      const frees = window[window.length - limit]! + WINDOW_MS;
      return {
        limit,
        remaining: 0,
        reset: Math.ceil((window[window.length - 1]! + WINDOW_MS) / 1000),
        retryAfter: Math.max(1, Math.ceil((frees - now) / 1000)),
      };
    }
    window.push(now);
    this.ctx.storage.sql.exec("INSERT INTO hits (endpoint, at) VALUES (?, ?)", endpoint, now);
    if (window.length === 1 || Math.random() < 0.01)
      this.ctx.storage.sql.exec("DELETE FROM hits WHERE endpoint = ? AND at <= ?", endpoint, since);
    return { limit, remaining: limit - window.length, reset: Math.ceil((now + WINDOW_MS) / 1000) };
  }
}

function refuse(err: DomainError): Refusal {
  return { ok: false, code: err.code, message: err.message, details: err.details };
}
