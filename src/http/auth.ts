import { and, eq, gt, isNull } from "drizzle-orm";
import type { MiddlewareHandler } from "hono";
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
import type { AppEnv } from "./env";

export const SESSION_COOKIE = "alms_session";

export interface AuthenticateOptions {
  /** Also accept the dashboard session cookie; the cookie wins when both are sent. */
  session?: boolean;
  /** The route's rate-limit budget: counted by the key's gate in the same round trip. */
  endpoint?: EndpointName;
}

/** Resolves the caller from `X-API-Key` (or, where allowed, the session cookie) into `c.var.caller`. */
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
    const { caller, rate } = await callerFromKey(c.env, secret, opts.endpoint ?? null);
    c.set("caller", caller);
    if (rate) c.set("rateLimit", rate);
    await next();
  };
}

/**
 * A secret's hash maps to its key id forever (secrets are never reassigned), so the
 * mapping is kept per isolate; everything that can change lives in the key's gate.
 */
const keyIdByHash = new Map<string, string>();
const KEY_ID_CACHE_LIMIT = 10_000;

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

export async function callerFromKey(
  env: Env,
  secret: string,
  endpoint: EndpointName | null,
): Promise<{ caller: Caller; rate?: RateDecision }> {
  const environmentMode = env.API_MODE as KeyMode;
  checkKeyFormat(secret, environmentMode);
  const hash = await hashSecret(secret);
  const keyId = await keyIdFor(env.DB, hash);
  if (!keyId) throw new DomainError("api_key_invalid");
  let answer: unknown;
  try {
    answer = await env.KEY_GATE.getByName(keyId).admit(keyId, hash, environmentMode, endpoint);
  } catch (err) {
    throw new DomainError("rate_limit_unavailable", { retryAfter: unavailableRetryAfter(err) });
  }
  // Fail closed on an answer that is not a verdict.
  if (!answer || typeof answer !== "object" || typeof (answer as { ok?: unknown }).ok !== "boolean") {
    throw new DomainError("rate_limit_unavailable", { retryAfter: 5 });
  }
  const verdict = answer as GateVerdict;
  if (!verdict.ok) throw new DomainError(verdict.code, { message: verdict.message, details: verdict.details });
  const { key, rate } = verdict;
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
  };
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
