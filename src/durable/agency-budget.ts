import { DurableObject } from "cloudflare:workers";
import { ENDPOINT_NAMES, type EndpointName, MAX_BUDGET, WINDOW_MS } from "../domain/budgets";
import type { LeaseAnswer, LeaseAsk, Returned } from "./budget-lease";

interface Grant {
  id: string;
  at: number;
  n: number;
}

/** No lease is larger than this share of the agency's budget, so a few keys cannot hold all of it. */
const LEASE_SHARE = 16;

/**
 * One per agency (addressed by agency id): the sliding window per endpoint that all the
 * agency's keys share. Keys' gates do not ask it per request: each leases a few requests
 * at a time (as many as its key sent in the last lease period) and gives back what it did
 * not use, so the agency's window is exact to within the leases outstanding, and the hot
 * path of a busy key meets this object about once per lease.
 */
export class AgencyBudget extends DurableObject<Env> {
  #grants = new Map<string, Grant[]>();
  #counts = new Map<string, number>();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    ctx.blockConcurrencyWhile(async () => {
      const sql = ctx.storage.sql;
      sql.exec(
        "CREATE TABLE IF NOT EXISTS grants (id TEXT PRIMARY KEY, endpoint TEXT NOT NULL, at INTEGER NOT NULL, " +
          "n INTEGER NOT NULL)",
      );
      sql.exec("CREATE INDEX IF NOT EXISTS grants_at ON grants (at)");
      const since = Date.now() - WINDOW_MS;
      sql.exec("DELETE FROM grants WHERE at <= ?", since);
      for (const row of sql.exec<{ id: string; endpoint: string; at: number; n: number }>(
        "SELECT id, endpoint, at, n FROM grants ORDER BY at",
      )) {
        this.#list(row.endpoint).push({ id: row.id, at: row.at, n: row.n });
        this.#counts.set(row.endpoint, (this.#counts.get(row.endpoint) ?? 0) + row.n);
      }
    });
  }

  /** Grants up to `want` requests of the agency's window for `endpoint`, or says when one fits again. */
  async lease(ask: LeaseAsk, now = Date.now()): Promise<LeaseAnswer> {
    if (!ENDPOINT_NAMES.includes(ask.endpoint)) throw new Error(`no budget named ${String(ask.endpoint)}`);
    const ceiling = bounded(ask.ceiling);
    if (ask.returning?.length) this.#giveBack(ask.endpoint, ask.returning);
    this.#evict(ask.endpoint, now);
    const used = this.#counts.get(ask.endpoint) ?? 0;
    const room = ceiling - used;
    if (room <= 0) {
      const grants = this.#list(ask.endpoint);
      // The window has room again once enough of the oldest grants have left it.
      let left = used;
      let frees = now + WINDOW_MS;
      for (const grant of grants) {
        left -= grant.n;
        if (left < ceiling) {
          frees = grant.at + WINDOW_MS;
          break;
        }
      }
      const newest = grants.at(-1)?.at ?? now;
      return {
        ok: false,
        limit: ceiling,
        remaining: 0,
        reset: Math.ceil((newest + WINDOW_MS) / 1000),
        retryAfter: Math.max(1, Math.ceil((frees - now) / 1000)),
      };
    }
    const granted = Math.min(room, Math.max(1, Math.ceil(ceiling / LEASE_SHARE)), bounded(ask.want));
    const grant = { id: crypto.randomUUID(), at: now, n: granted };
    const grants = this.#list(ask.endpoint);
    // Gates' clocks may be a moment apart: the list stays in time order, so eviction takes its head.
    grants.splice(grants.findLastIndex((g) => g.at <= now) + 1, 0, grant);
    this.#counts.set(ask.endpoint, used + granted);
    this.ctx.storage.sql.exec(
      "INSERT INTO grants (id, endpoint, at, n) VALUES (?, ?, ?, ?)",
      grant.id,
      ask.endpoint,
      grant.at,
      grant.n,
    );
    return { ok: true, id: grant.id, granted };
  }

  /** Takes back what leases left unused: those requests were never admitted. */
  async giveBack(endpoint: EndpointName, returning: Returned[]): Promise<void> {
    if (!ENDPOINT_NAMES.includes(endpoint)) return;
    this.#giveBack(endpoint, returning);
  }

  /** Requests used of each endpoint's window now, counting nothing. */
  async used(now = Date.now()): Promise<Partial<Record<EndpointName, { used: number; newest: number }>>> {
    const report: Partial<Record<EndpointName, { used: number; newest: number }>> = {};
    for (const endpoint of ENDPOINT_NAMES) {
      this.#evict(endpoint, now);
      const newest = this.#grants.get(endpoint)?.at(-1)?.at;
      if (newest !== undefined) report[endpoint] = { used: this.#counts.get(endpoint) ?? 0, newest };
    }
    return report;
  }

  #giveBack(endpoint: string, returning: Returned[]): void {
    const grants = this.#grants.get(endpoint);
    if (!grants) return;
    for (const { id, unused } of returning.slice(0, LEASE_SHARE)) {
      const grant = grants.find((g) => g.id === id);
      if (!grant || !Number.isInteger(unused) || unused <= 0) continue;
      const back = Math.min(unused, grant.n);
      grant.n -= back;
      this.#counts.set(endpoint, (this.#counts.get(endpoint) ?? 0) - back);
      this.ctx.storage.sql.exec("UPDATE grants SET n = ? WHERE id = ?", grant.n, grant.id);
    }
  }

  #list(endpoint: string): Grant[] {
    let grants = this.#grants.get(endpoint);
    if (!grants) {
      grants = [];
      this.#grants.set(endpoint, grants);
    }
    return grants;
  }

  #evict(endpoint: string, now: number): void {
    const grants = this.#grants.get(endpoint);
    if (!grants?.length) return;
    const since = now - WINDOW_MS;
    let gone = 0;
    let freed = 0;
    while (gone < grants.length && grants[gone]!.at <= since) freed += grants[gone++]!.n;
    if (!gone) return;
    grants.splice(0, gone);
    this.#counts.set(endpoint, (this.#counts.get(endpoint) ?? 0) - freed);
    this.ctx.storage.sql.exec("DELETE FROM grants WHERE endpoint = ? AND at <= ?", endpoint, since);
  }
}

const bounded = (n: number): number => (Number.isInteger(n) && n >= 1 ? Math.min(n, MAX_BUDGET) : 1);
