// The bench's calls to the product: the internal API (operator token) to create agencies,
// users and keys, and the public API the way an integrator calls it. Every call is
// bounded by a timeout.
import { randomUUID } from "node:crypto";

const CALL_TIMEOUT_MS = 30_000;

/** The endpoint names whose budgets the bench raises on every key it mints. */
const BENCH_ENDPOINTS = [
  "read_user_single",
  "create_listing",
  "read_listings_list",
  "read_tours_list",
  "manage_webhook_endpoints",
] as const;
const BENCH_BUDGET = 100_000;

export interface Reply {
  status: number;
  json: any;
  text: string;
}

export interface BenchKey {
  id: string;
  secret: string;
}

export class Api {
  readonly origin: string;
  readonly operatorToken: string;
  readonly #admins = new Map<string, BenchKey>();
  #platformAdmin: Promise<string> | undefined;

  constructor(origin: string, operatorToken: string) {
    this.origin = origin;
    this.operatorToken = operatorToken;
  }

  async #call(path: string, init: RequestInit): Promise<Reply> {
    const res = await fetch(`${this.origin}${path}`, { ...init, signal: AbortSignal.timeout(CALL_TIMEOUT_MS) });
    const text = await res.text();
    let json: any;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    return { status: res.status, json, text };
  }

  /** An internal (dashboard) call; anything but 2xx is an error of the bench. */
  async internal(path: string, body?: unknown, method = "POST"): Promise<any> {
    const r = await this.#call(path, {
      method,
      headers: { Authorization: `Bearer ${this.operatorToken}`, "Content-Type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    if (r.status >= 300) throw new Error(`${method} ${path}: ${r.status} ${r.text.slice(0, 500)}`);
    return r.json;
  }

  /** A public call with a key; mutating calls carry a fresh idempotency key. */
  async public(path: string, key: string, opts: { method?: string; body?: unknown } = {}): Promise<Reply> {
    const method = opts.method ?? (opts.body === undefined ? "GET" : "POST");
    const headers: Record<string, string> = { "X-API-Key": key };
    if (method !== "GET") headers["X-Idempotency-Key"] = randomUUID();
    if (opts.body !== undefined) headers["Content-Type"] = "application/json";
    return this.#call(path, { method, headers, body: opts.body === undefined ? undefined : JSON.stringify(opts.body) });
  }

  /** A public call that must answer `status`. */
  async expect(status: number, path: string, key: string, opts: { method?: string; body?: unknown } = {}) {
    const r = await this.public(path, key, opts);
    if (r.status !== status) {
      throw new Error(`${opts.method ?? "GET"} ${path}: expected ${status}, got ${r.status} ${r.text.slice(0, 500)}`);
    }
    return r.json;
  }

  async agency(name: string, kind: "media_agency" | "platform" = "media_agency"): Promise<{ id: string }> {
    return this.internal("/internal/v1/agencies", { name, kind });
  }

  async user(agencyId: string, role: string, name: string): Promise<{ id: string }> {
    return this.internal("/internal/v1/users", {
      agency_id: agencyId,
      role,
      name,
      email: `${role}-${randomUUID()}@bench.test`,
    });
  }

  /**
   * A platform admin's key with the `admin` scope for the agency (an admin key manages
   * the keys of the agency it is bound to only), whose own admin budget is raised.
   */
  async #adminKey(agencyId: string): Promise<BenchKey> {
    const known = this.#admins.get(agencyId);
    if (known) return known;
    this.#platformAdmin ??= (async () => {
      const platform = await this.agency("Bench Platform", "platform");
      return (await this.user(platform.id, "admin", "Bench Admin")).id;
    })();
    const adminId = await this.#platformAdmin;
    const minted = await this.internal("/internal/v1/api-keys", {
      agency_id: agencyId,
      minted_by_user_id: adminId,
      scopes: ["admin"],
    });
    await this.internal(
      `/internal/v1/api-keys/${minted.key.id}`,
      { rate_limit_overrides: { update_rate_limits: BENCH_BUDGET } },
      "PATCH",
    );
    const key = { id: minted.key.id, secret: minted.secret };
    this.#admins.set(agencyId, key);
    return key;
  }

  /**
   * A key of the agency, minted by `userId`, whose budgets for the benched routes are
   * raised to the maximum through the admin rate-limits route, so the load measures the
   * guards' work and not 429s.
   */
  async key(agencyId: string, userId: string, scopes?: string[]): Promise<BenchKey> {
    const minted = await this.internal("/internal/v1/api-keys", {
      agency_id: agencyId,
      minted_by_user_id: userId,
      ...(scopes ? { scopes } : {}),
    });
    const admin = await this.#adminKey(agencyId);
    const overrides = Object.fromEntries(BENCH_ENDPOINTS.map((name) => [name, BENCH_BUDGET]));
    await this.expect(200, `/api/v1/admin/api-keys/${minted.key.id}/rate-limits`, admin.secret, {
      method: "PATCH",
      body: { overrides },
    });
    return { id: minted.key.id, secret: minted.secret };
  }

  /**
   * Runs the every-minute Cron once, as the platform would (wrangler dev never fires crons
   * itself): through wrangler's proxy at /cdn-cgi/handler/, on the Worker's own workerd at
   * /cdn-cgi/local/.
   */
  async cronTick(): Promise<void> {
    let status = 0;
    for (const path of ["/cdn-cgi/handler/scheduled", "/cdn-cgi/local/scheduled"]) {
      const res = await fetch(`${this.origin}${path}?cron=${encodeURIComponent("* * * * *")}`, {
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      await res.body?.cancel();
      if (res.ok) return;
      status = res.status;
      if (status !== 404) break;
    }
    throw new Error(`the Cron trigger answered ${status}`);
  }
}
