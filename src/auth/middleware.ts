import { and, eq, gt, isNull } from "drizzle-orm";
import type { MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { AppEnv } from "../env";
import { database } from "../db/client";
import { agencies, apiKeys, apiKeySecrets, sessions, users } from "../db/schema";
import { ApiError } from "../lib/errors";
import { nowIso, sha256Hex } from "../lib/ids";
import { DEFAULT_SCOPES, isPlatformRole, type Caller, type Role, type Scope } from "./caller";
import { checkKeyFormat, checkKeyState, hashSecret, type KeyMode } from "./keys";

export const SESSION_COOKIE = "alms_session";

export interface AuthenticateOptions {
  /** Also accept the dashboard session cookie; the cookie wins when both are sent. */
  session?: boolean;
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
      if (/^bearer\s/i.test(c.req.header("authorization") ?? "")) throw new ApiError("api_key_header_mismatch");
      throw new ApiError(opts.session ? "auth_required" : "api_key_missing");
    }
    c.set("caller", await callerFromKey(c.env.DB, secret, c.env.API_MODE as KeyMode));
    await next();
  };
}

export async function callerFromKey(d1: D1Database, secret: string, environmentMode: KeyMode): Promise<Caller> {
  checkKeyFormat(secret, environmentMode);
  const row = await database(d1)
    .select({ key: apiKeys, secret: { supersededAt: apiKeySecrets.supersededAt, deactivatedAt: apiKeySecrets.deactivatedAt } })
    .from(apiKeySecrets)
    .innerJoin(apiKeys, eq(apiKeys.id, apiKeySecrets.keyId))
    .where(eq(apiKeySecrets.hash, await hashSecret(secret)))
    .get();
  if (!row) throw new ApiError("api_key_invalid");
  checkKeyState({ ...row.key, secret: row.secret }, Date.now(), environmentMode);
  return {
    via: "api_key",
    agencyId: row.key.agencyId,
    role: row.key.role as Role,
    scopes: new Set(row.key.scopes as Scope[]),
    userId: row.key.mintedByUserId,
    keyId: row.key.id,
  };
}

async function callerFromSession(d1: D1Database, token: string): Promise<Caller> {
  const row = await database(d1)
    .select({ user: users, agencyKind: agencies.kind })
    .from(sessions)
    .innerJoin(users, eq(users.id, sessions.userId))
    .leftJoin(agencies, eq(agencies.id, users.agencyId))
    .where(and(eq(sessions.tokenHash, await sha256Hex(token)), isNull(sessions.revokedAt), gt(sessions.expiresAt, nowIso())))
    .get();
  if (!row || !row.user.isActive) {
    throw new ApiError("auth_required", { message: "The session cookie is invalid or expired; sign in again or send X-API-Key.", details: { reason: "session_invalid" } });
  }
  // A session proves who the user is; the agency it acts for must come from the hierarchy.
  if (!row.agencyKind || row.agencyKind === "platform" || isPlatformRole(row.user.role)) {
    throw new ApiError("agency_resolution_failed", { details: { user_id: row.user.id } });
  }
  return { via: "session", agencyId: row.user.agencyId, role: row.user.role as Role, scopes: new Set(DEFAULT_SCOPES), userId: row.user.id };
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
      throw new ApiError("auth.scope_denied", { message: `The API key lacks the '${opts.scope}' scope.`, details: { required_scope: opts.scope } });
    }
    if (opts.roles && !opts.roles.includes(caller.role)) {
      throw new ApiError("role_forbidden", { message: `The role '${caller.role}' is not permitted on this endpoint.`, details: { role: caller.role, allowed_roles: opts.roles } });
    }
    await next();
  };
}
