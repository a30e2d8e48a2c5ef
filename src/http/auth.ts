import { and, eq, gt, isNull } from "drizzle-orm";
import type { Context, MiddlewareHandler, Next } from "hono";
import { getCookie } from "hono/cookie";
import { database } from "../db/client";
import { agencies, apiKeySecrets, sessions, users } from "../db/schema";
import type { EndpointName } from "../domain/budgets";
import { checkKeyFormat, hashSecret, type KeyMode } from "../domain/keys";
import { type Caller, DEFAULT_SCOPES, isPlatformRole, type Role, type Scope } from "../domain/roles";
import type { GateVerdict, RateDecision } from "../durable/key-gate";
import { DomainError } from "../lib/errors";
import { nowIso, sha256Hex } from "../lib/ids";
import { unavailableRetryAfter } from "../lib/transient";
import type { Admitted, AppEnv } from "./env";
import { claimEarly } from "./idempotency";
import { setRateHeaders } from "./rate-limit";
import { rerunOf } from "./speculation";

export const SESSION_COOKIE = "alms_session";

export interface AuthenticateOptions {
  /** Also accept the dashboard session cookie; the cookie wins when both are sent. */
  session?: boolean;
  /** The route's rate-limit budget: counted by the key's gate in the same round trip. */
  endpoint?: EndpointName;
  /**
   * A read with no effects beyond its answer: for a key this isolate has seen confirmed,
   * it starts on that caller while the gate decides, and its answer is kept only when the
   * gate admits the same caller (see `rerunDiscarded`).
   */
  speculate?: boolean;
  /**
   * An idempotent write and its body limit: for a key this isolate has seen confirmed,
   * its idempotency key is claimed in the ledger while the gate decides (see `EarlyClaim`),
   * and the claim is kept only when the gate confirms the same caller.
   */
  claim?: { bodyLimit: number };
}

const READS = new Set(["GET", "HEAD"]);

/**
 * Resolves the caller from `X-API-Key` (or, where allowed, the session cookie) into
 * `c.var.caller`. A key's request runs in a D1 session: a read starts at the bookmark of
 * the key's latest write, a write's bookmark is handed to the key's gate before it answers.
 */
export function authenticate(opts: AuthenticateOptions = {}): MiddlewareHandler<AppEnv> {
  return async function authenticate(c, next) {
    const cookie = opts.session ? getCookie(c, SESSION_COOKIE) : undefined;
    if (cookie) {
      c.set("caller", await callerFromSession(c.env.DB, cookie));
      return next();
    }
    const secret = c.req.header("x-api-key");
    if (secret === undefined || secret === "") {
      if (/^bearer\s/i.test(c.req.header("authorization") ?? "")) throw new DomainError("api_key_header_mismatch");
      throw new DomainError(opts.session ? "auth_required" : "api_key_missing");
    }
    const hash = await hashOfKey(c.env, secret);
    const rerun = rerunOf(c.req.raw);
    const read = READS.has(c.req.method);
    const known = opts.speculate && read && !rerun ? confirmed.get(hash) : undefined;
    const last = opts.claim && !read && !rerun ? confirmed.get(hash) : undefined;
    const claim = last && opts.claim ? claimEarly(c, last.caller, opts.claim.bodyLimit) : undefined;
    const admitted = rerun?.admitted ?? admit(c.env, hash, opts.endpoint ?? null);
    if (!known) {
      const { caller, rate, bookmark } = await admitted.catch(async (err: unknown) => {
        await claim?.drop();
        throw err;
      });
      c.set("caller", caller);
      if (rate) c.set("rateLimit", rate);
      if (claim && last && sameCaller(last.caller, caller)) c.set("claim", claim);
      else await claim?.drop();
      try {
        return await inSession(c, hash, read ? (bookmark ?? "first-unconstrained") : "first-primary", next);
      } finally {
        // A request refused before the idempotency guard took the claim over leaves no lease.
        await claim?.drop();
      }
    }
    // The read starts on the caller this isolate last saw confirmed; the gate answers meanwhile.
    const verdict = admitted.then(
      (a) => a,
      () => undefined,
    );
    c.set("caller", known.caller);
    c.set("speculating", true);
    await inSession(c, hash, known.bookmark ?? "first-unconstrained", next);
    c.set("speculating", false);
    const answer = await verdict;
    if (answer && sameAuthority(known, answer) && rateAdmits(opts.endpoint, answer.rate)) {
      c.set("caller", answer.caller);
      if (answer.rate) {
        c.set("rateLimit", answer.rate);
        setRateHeaders(c, answer.rate);
      }
      return;
    }
    c.set("discarded", admitted);
  };
}

/**
 * Runs the rest of the request on a D1 session of `constraint` (a bookmark or a
 * constraint); for a write, the bookmark it reached is kept for the key's next reads.
 */
async function inSession(c: Context<AppEnv>, hash: string, constraint: string, next: Next): Promise<void> {
  const plain = c.env;
  const session = plain.DB.withSession(constraint);
  // Drizzle's D1 driver needs only `prepare` and `batch`, which a session has.
  c.env = { ...plain, DB: session as unknown as D1Database };
  const plainDb = c.get("db");
  c.set("db", database(c.env.DB));
  const write = !READS.has(c.req.method);
  let handed: Promise<void> | undefined;
  // The idempotency guard starts it beside the ledger's `complete`, once the change has committed.
  if (write) c.set("handOffBookmark", () => (handed ??= keepBookmark(plain, hash, session.getBookmark())));
  try {
    await next();
  } finally {
    c.env = plain;
    c.set("db", plainDb);
    if (write) await (handed ?? keepBookmark(plain, hash, session.getBookmark()));
  }
}

/**
 * A secret's hash maps to its key id forever (secrets are never reassigned), so the
 * mapping is kept per isolate. So is the caller the key's gate last confirmed, with its
 * bookmark: reads may start on it, but every answer waits for the gate's own verdict.
 */
const keyIdByHash = new Map<string, string>();
const confirmed = new Map<string, Pick<Admitted, "caller" | "bookmark">>();
const KEY_ID_CACHE_LIMIT = 10_000;

/** Forgets what this isolate learned of keys, as a fresh isolate would start (for tests). */
export function forgetKeys(): void {
  keyIdByHash.clear();
  confirmed.clear();
}

async function keyIdFor(d1: D1Database, hash: string): Promise<string | undefined> {
  const cached = keyIdByHash.get(hash);
  if (cached) return cached;
  const row = await database(d1)
    .select({ keyId: apiKeySecrets.keyId })
    .from(apiKeySecrets)
    .where(eq(apiKeySecrets.hash, hash))
    .get();
  if (!row) return undefined;
  if (keyIdByHash.size >= KEY_ID_CACHE_LIMIT) keyIdByHash.clear();
  keyIdByHash.set(hash, row.keyId);
  return row.keyId;
}

async function hashOfKey(env: Env, secret: string): Promise<string> {
  checkKeyFormat(secret, env.API_MODE as KeyMode);
  return hashSecret(secret);
}

/** Authenticates the key and counts the request in its gate, in one round trip. */
async function admit(env: Env, hash: string, endpoint: EndpointName | null): Promise<Admitted> {
  try {
    const admitted = await admitOnce(env, hash, endpoint);
    if (confirmed.size >= KEY_ID_CACHE_LIMIT) confirmed.clear();
    confirmed.set(hash, { caller: admitted.caller, bookmark: admitted.bookmark });
    return admitted;
  } catch (err) {
    confirmed.delete(hash);
    throw err;
  }
}

async function admitOnce(env: Env, hash: string, endpoint: EndpointName | null): Promise<Admitted> {
  const keyId = await keyIdFor(env.DB, hash);
  if (!keyId) throw new DomainError("api_key_invalid");
  let answer: unknown;
  try {
    answer = await env.KEY_GATE.getByName(keyId).admit(keyId, hash, env.API_MODE as KeyMode, endpoint);
  } catch (err) {
    throw new DomainError("rate_limit_unavailable", { retryAfter: unavailableRetryAfter(err) });
  }
  // Fail closed on an answer that is not a verdict.
  if (!answer || typeof answer !== "object" || typeof (answer as { ok?: unknown }).ok !== "boolean") {
    throw new DomainError("rate_limit_unavailable", { retryAfter: 5 });
  }
  const verdict = answer as GateVerdict;
  if (!verdict.ok) throw new DomainError(verdict.code, { message: verdict.message, details: verdict.details });
  const { key, rate, bookmark } = verdict;
  return {
    caller: {
      via: "api_key",
      agencyId: key.agencyId,
      role: key.role as Role,
      scopes: new Set(key.scopes as Scope[]),
      userId: key.mintedByUserId,
      keyId: key.id,
    },
    rate,
    bookmark: typeof bookmark === "string" ? bookmark : undefined,
  };
}

/** Hands a write's bookmark to the key's gate (the truth for every isolate) and keeps it here too. */
async function keepBookmark(env: Env, hash: string, bookmark: string | null): Promise<void> {
  const known = confirmed.get(hash);
  const keyId = known?.caller.keyId ?? keyIdByHash.get(hash);
  if (!bookmark || !keyId) return;
  if (known && (known.bookmark === undefined || bookmark > known.bookmark)) {
    confirmed.set(hash, { ...known, bookmark });
  }
  try {
    await env.KEY_GATE.getByName(keyId).wrote(bookmark);
  } catch (err) {
    // The write has committed; a later read of another isolate may then start before it.
    console.error(JSON.stringify({ level: "warn", key_id: keyId, error: String(err) }));
  }
}

/** Whether the read ran on the very authority the gate confirmed, from the same bookmark. */
function sameAuthority(known: Pick<Admitted, "caller" | "bookmark">, answer: Admitted): boolean {
  return sameCaller(known.caller, answer.caller) && known.bookmark === answer.bookmark;
}

/** The same authority: agency, key, user, role and scopes. */
function sameCaller(a: Caller, b: Caller): boolean {
  return (
    a.agencyId === b.agencyId &&
    a.keyId === b.keyId &&
    a.role === b.role &&
    a.userId === b.userId &&
    a.scopes.size === b.scopes.size &&
    [...a.scopes].every((scope) => b.scopes.has(scope))
  );
}

/** Whether the gate's rate decision lets the request through (when the route is rate limited). */
function rateAdmits(endpoint: EndpointName | undefined, rate: RateDecision | undefined): boolean {
  if (!endpoint) return true;
  return (
    !!rate && typeof rate.limit === "number" && typeof rate.remaining === "number" && rate.retryAfter === undefined
  );
}

async function callerFromSession(d1: D1Database, token: string): Promise<Caller> {
  const row = await database(d1)
    .select({ user: users, agencyKind: agencies.kind })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .leftJoin(agencies, eq(agencies.id, users.agencyId))
    .where(
      and(eq(sessions.tokenHash, await sha256Hex(token)), isNull(sessions.revokedAt), gt(sessions.expiresAt, nowIso())),
    )
    .get();
  if (!row?.user.isActive) {
    throw new DomainError("auth_required", {
      message: "The session cookie is invalid or expired; sign in again or send X-API-Key.",
      details: { reason: "session_invalid" },
    });
  }
  // A session proves who the user is; the agency it acts for must come from the hierarchy.
  if (!row.agencyKind || row.agencyKind === "platform" || isPlatformRole(row.user.role)) {
    throw new DomainError("agency_resolution_failed", { details: { user_id: row.user.id } });
  }
  return {
    via: "session",
    agencyId: row.user.agencyId,
    role: row.user.role as Role,
    scopes: new Set(DEFAULT_SCOPES),
    userId: row.user.id,
  };
}

export interface AuthorizeOptions {
  scope?: Scope;
  /** Caller roles permitted on the route; every role when omitted. */
  roles?: readonly Role[];
}

export function authorize(opts: AuthorizeOptions): MiddlewareHandler<AppEnv> {
  return async function authorize(c, next) {
    const caller = c.get("caller");
    if (opts.scope && !caller.scopes.has(opts.scope)) {
      throw new DomainError("auth.scope_denied", {
        message: `The API key lacks the '${opts.scope}' scope.`,
        details: { required_scope: opts.scope },
      });
    }
    if (opts.roles && !opts.roles.includes(caller.role)) {
      throw new DomainError("role_forbidden", {
        message: `The role '${caller.role}' is not permitted on this endpoint.`,
        details: { role: caller.role, allowed_roles: opts.roles },
      });
    }
    await next();
  };
}
