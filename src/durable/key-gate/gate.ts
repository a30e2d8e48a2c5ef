import { DurableObject } from "cloudflare:workers";
import type { ApiKey } from "../../db/schema";
import { CONTROL_SHARD, enterSecret, SHARD_NAMES, type ShardName, shardD1, shardDb } from "../../db/shards";
import { type KeyChange, revokeKey, rotateKey, updateKey } from "../../domain/api-keys";
import { budgetFor, ENDPOINT_NAMES, type EndpointName } from "../../domain/budgets";
import { checkKeyState, hashSecret, type KeyMode } from "../../domain/keys";
import { keyringOf } from "../../lib/crypto/keyring";
import { DomainError } from "../../lib/errors";
import { tracedCall } from "../traced";
import { KeyStateCache } from "./key-state";
import { BudgetLeases } from "./leases";
import { type GateVerdict, type RateDecision, type Refusal, refuse } from "./verdict";
import { RateWindows } from "./windows";
import { OpenWrites } from "./writes";

/** Longer bookmarks are refused; D1's are far shorter. */
const BOOKMARK_MAX_LENGTH = 1_024;

/**
 * One per API key (addressed by key id), so a request is authenticated, rate-limited and
 * told where its reads start in one round trip. A thin RPC surface over its parts: the
 * key's cached state, its rate windows, its leases of the agency's budget, the bookmark
 * of its latest write, and its writes not reported yet (reads go to the primary
 * meanwhile). One alarm writes the windows' counts and gives back what ended leases left
 * unused.
 */
export class KeyGate extends DurableObject<Env> {
  readonly #state: KeyStateCache;
  #windows!: RateWindows;
  #leases!: BudgetLeases;
  #bookmark: string | undefined;
  #writes!: OpenWrites;
  /** When the alarm is set to run; undefined when none is set. */
  #alarmAt: number | undefined;
  /** The shard that holds the key's agency: told by the first caller that found the key, then kept. */
  #kept: ShardName | undefined;

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    this.#state = new KeyStateCache(
      () => shardD1(this.env, this.#shard),
      () => shardD1(this.env, CONTROL_SHARD),
    );
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      this.#windows = new RateWindows(sql);
      this.#leases = new BudgetLeases(env, this.#windows);
      sql.exec("CREATE TABLE IF NOT EXISTS gate_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)");
      const meta = new Map(
        sql
          .exec<{ name: string; value: string }>("SELECT name, value FROM gate_meta")
          .toArray()
          .map((r) => [r.name, r.value]),
      );
      this.#bookmark = meta.get("bookmark");
      const writesUntil = Number(meta.get("writes_until"));
      this.#writes = new OpenWrites(Number.isFinite(writesUntil) ? writesUntil : undefined, (until) =>
        this.#keepMeta("writes_until", String(until)),
      );
      const shard = meta.get("shard");
      if (shard !== undefined && SHARD_NAMES.includes(shard as ShardName)) this.#kept = shard as ShardName;
      this.#alarmAt = (await ctx.storage.getAlarm()) ?? undefined;
    });
  }

  /**
   * Keeps the shard the caller found the key's agency on, written before anything is read there.
   * Once kept, the gate's own is the truth: a move tells the gate (not the callers' caches).
   */
  #keepShard(shard: ShardName): void {
    if (this.#kept !== undefined) return;
    this.#kept = shard;
    this.#state.invalidate();
    this.#keepMeta("shard", shard);
  }

  #keepMeta(name: string, value: string): void {
    this.ctx.storage.sql.exec(
      "INSERT INTO gate_meta (name, value) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET value = excluded.value",
      name,
      value,
    );
  }

  /** The shard the key's state is read from and written to. */
  get #shard(): ShardName {
    return this.#kept ?? CONTROL_SHARD;
  }

  /**
   * The key's agency now lives on `shard` (a move switched it): the gate reads and routes there
   * from now on, with the new shard's bookmark (the old one's means nothing there).
   */
  async moveTo(shard: ShardName, bookmark?: string): Promise<void> {
    this.#kept = shard;
    this.#bookmark = bookmark;
    this.#state.invalidate();
    this.#keepMeta("shard", shard);
    if (bookmark === undefined) this.ctx.storage.sql.exec("DELETE FROM gate_meta WHERE name = 'bookmark'");
    else this.#keepMeta("bookmark", bookmark);
  }

  /** A change made elsewhere (the minting user's state, the rotation sweep): read the key afresh. */
  async reload(): Promise<void> {
    this.#state.invalidate();
  }

  /**
   * Every change to a key runs here, in the key's own gate: the D1 write and the end of
   * the cached state happen in one place, so no request after the change sees the old
   * state, even if the caller goes away halfway.
   */
  async apply(
    keyId: string,
    change: KeyChange,
    shard?: ShardName,
  ): Promise<{ ok: true; key: ApiKey; secret?: string } | Refusal> {
    if (shard) this.#keepShard(shard);
    const db = shardDb(this.env, this.#shard);
    this.#state.invalidate();
    try {
      switch (change.op) {
        case "rotate": {
          const rotated = await rotateKey(db, keyId, keyringOf(this.env));
          const hash = await hashSecret(rotated.secret);
          await enterSecret(this.env, this.#shard, { hash, keyId, agencyId: rotated.key.agencyId });
          return { ok: true, ...rotated };
        }
        case "revoke":
          return { ok: true, key: await revokeKey(db, keyId) };
        case "update":
          return { ok: true, key: await updateKey(db, keyId, change.patch, change.agencyId) };
      }
    } catch (err) {
      if (err instanceof DomainError) return refuse(err);
      throw err;
    } finally {
      this.#state.invalidate();
    }
  }

  /**
   * Authenticates the presented secret (by hash) and, for a rate-limited route, counts
   * the request against the key's window for `endpoint`. With `counted` false (a
   * conditional read, counted by `count` only when it is not answered 304) the window is
   * reported as it stands, counting nothing. A `writing` request gets a ticket that its
   * bookmark hand-off closes; until then the key's reads are told to go to the primary.
   */
  async admit(
    keyId: string,
    secretHash: string,
    environmentMode: KeyMode,
    endpoint: EndpointName | null,
    now = Date.now(),
    traceparent?: string,
    counted = true,
    shard?: ShardName,
    writing = false,
  ): Promise<GateVerdict> {
    if (shard) this.#keepShard(shard);
    const verdict = await this.#admit(keyId, secretHash, environmentMode, endpoint, now, counted, writing);
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
    writing: boolean,
  ): Promise<GateVerdict> {
    const loaded = await this.#state.load(keyId);
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
    const limit = endpoint ? budgetFor(endpoint, loaded.key.rateLimitOverrides) : undefined;
    if (endpoint && limit === undefined)
      return refuse(new DomainError("rate_limit_misconfigured", { details: { endpoint } }));
    const where = {
      bookmark: this.#bookmark,
      shard: this.#shard,
      primary: this.#writes.primary(now) || undefined,
      ticket: writing ? this.#writes.open(now) : undefined,
    };
    if (!endpoint || limit === undefined) return { ok: true, key, ...where };
    if (!counted) return { ok: true, key, rate: this.#windows.peek(endpoint, limit, now), ...where };
    const rate = await this.#leases.admit(agencyId, endpoint, limit, now);
    await this.#schedule();
    return { ok: true, key, rate, ...where };
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
    const loaded = await this.#state.load(keyId);
    const limit = loaded && budgetFor(endpoint, loaded.key.rateLimitOverrides);
    const rate = limit === undefined ? undefined : await this.#leases.admit(loaded!.key.agencyId, endpoint, limit, now);
    await this.#schedule();
    tracedCall(traceparent, "key gate count", () => ({
      key_id: keyId,
      endpoint,
      rate_remaining: rate?.remaining ?? null,
    }));
    return rate;
  }

  /**
   * Keeps the bookmark of a committed write of this key, so its next reads, from any
   * isolate, start at least there, and closes the writes the hand-off reports (their
   * tickets from `admit`). Bookmarks order as strings; the latest one stays.
   */
  async wrote(bookmark: string | null, traceparent?: string, tickets?: string[]): Promise<void> {
    tracedCall(traceparent, "key gate bookmark", () => ({ closed: Array.isArray(tickets) ? tickets.length : 0 }));
    // The bookmark first, then the writes it reports end: in one turn, so no read falls between.
    if (this.#newer(bookmark)) {
      this.#bookmark = bookmark;
      this.#keepMeta("bookmark", bookmark);
    }
    this.#writes.close(tickets);
  }

  #newer(bookmark: unknown): bookmark is string {
    if (typeof bookmark !== "string" || !bookmark || bookmark.length > BOOKMARK_MAX_LENGTH) return false;
    return this.#bookmark === undefined || bookmark > this.#bookmark;
  }

  /**
   * Every budget of the key with what is left of its window now, counting nothing: the
   * key's own report of its rate limits. Undefined when the key is unknown.
   */
  async windows(keyId: string, now = Date.now()): Promise<Record<EndpointName, RateDecision> | undefined> {
    const loaded = await this.#state.load(keyId);
    if (!loaded) return undefined;
    const report = {} as Record<EndpointName, RateDecision>;
    for (const endpoint of ENDPOINT_NAMES) {
      const limit = budgetFor(endpoint, loaded.key.rateLimitOverrides);
      if (limit !== undefined) report[endpoint] = this.#windows.peek(endpoint, limit, now);
    }
    return report;
  }

  /** Counts a request of a caller that is not a key (a dashboard session) against its window. */
  async hit(endpoint: EndpointName, now = Date.now()): Promise<RateDecision | { misconfigured: true }> {
    const limit = budgetFor(endpoint, {});
    if (limit === undefined) return { misconfigured: true };
    const rate = this.#windows.hit(endpoint, limit, now);
    await this.#schedule();
    return rate;
  }

  /** Writes the windows' counts and gives back what ended leases left unused. */
  override async alarm(): Promise<void> {
    this.#alarmAt = undefined;
    const now = Date.now();
    this.#windows.flush(now);
    await this.#leases.returnEnded(now);
    await this.#schedule();
  }

  /** Sets the alarm for the first of: the windows' next write, the end of the first lease held. */
  async #schedule(): Promise<void> {
    const due = [this.#windows.flushDue(), this.#leases.nextEnd()].filter((at) => at !== undefined);
    if (!due.length) return;
    const at = Math.min(...due);
    if (this.#alarmAt !== undefined && this.#alarmAt <= at) return;
    this.#alarmAt = at;
    await this.ctx.storage.setAlarm(at);
  }
}
