import { and, eq, gt, isNull } from "drizzle-orm";
import { agencies, sessions, users } from "../../db/schema";
import { agencyShard, SHARD_NAMES, type ShardName, shardDb } from "../../db/shards";
import type { EndpointName } from "../../domain/budgets";
import { type Caller, DEFAULT_SCOPES, isPlatformRole, type Role } from "../../domain/roles";
import type { RateDecision } from "../../durable/key-gate/verdict";
import { DomainError } from "../../lib/errors";
import { nowIso, sha256Hex } from "../../lib/ids";
import { RecentMisses } from "../../lib/recent-misses";
import { unavailableRetryAfter } from "../../lib/transient";

export const SESSION_COOKIE = "alms_session";

const sessionInvalid = () =>
  new DomainError("auth_required", {
    message: "The session cookie is invalid or expired; sign in again or send X-API-Key.",
    details: { reason: "session_invalid" },
  });

/**
 * Session tokens that named no live session, remembered for five minutes per isolate: a
 * token is random and never reissued, and one that expired or was revoked stays dead, so
 * a client repeating it costs one D1 query per isolate in that time, not one per request.
 */
const deadSessions = new RecentMisses(10_000, 5 * 60_000);

/** Forgets the remembered dead sessions, as a fresh isolate would start (for tests). */
export function forgetSessions(): void {
  deadSessions.clear();
}

/**
 * The dashboard user of a live session cookie, acting for their own agency, and the shard that
 * holds it. A session lives with its user, on the agency's shard: every shard is asked at once
 * (one indexed look-up each), and only the shard the map places the agency on is believed.
 */
export async function callerFromSession(env: Env, token: string): Promise<{ caller: Caller; shard: ShardName }> {
  const tokenHash = await sha256Hex(token);
  if (deadSessions.has(tokenHash)) throw sessionInvalid();
  const found = await Promise.all(
    SHARD_NAMES.map(async (shard) => {
      const row = await shardDb(env, shard)
        .select({ user: users, agencyKind: agencies.kind })
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .leftJoin(agencies, eq(agencies.id, users.agencyId))
        .where(and(eq(sessions.tokenHash, tokenHash), isNull(sessions.revokedAt), gt(sessions.expiresAt, nowIso())))
        .get();
      return row && { ...row, shard };
    }),
  );
  let row: (typeof found)[number];
  for (const hit of found) {
    if (hit && (await agencyShard(env, hit.user.agencyId))?.shard === hit.shard) row = hit;
  }
  if (!row) {
    deadSessions.add(tokenHash);
    throw sessionInvalid();
  }
  if (!row.user.isActive) throw sessionInvalid();
  // A session proves who the user is; the agency it acts for must come from the hierarchy.
  if (!row.agencyKind || row.agencyKind === "platform" || isPlatformRole(row.user.role)) {
    throw new DomainError("agency_resolution_failed", { details: { user_id: row.user.id } });
  }
  const caller: Caller = {
    via: "session",
    agencyId: row.user.agencyId,
    role: row.user.role as Role,
    scopes: new Set(DEFAULT_SCOPES),
    userId: row.user.id,
  };
  return { caller, shard: row.shard };
}

/** Counts a session's request against its user's own window for `endpoint`, in a gate of its own. */
export async function sessionRate(env: Env, caller: Caller, endpoint: EndpointName): Promise<RateDecision> {
  let answer: Awaited<ReturnType<DurableObjectStub<import("../../durable/key-gate/gate").KeyGate>["hit"]>>;
  try {
    answer = await env.KEY_GATE.getByName(`session:${caller.userId}`).hit(endpoint);
  } catch (err) {
    throw new DomainError("rate_limit_unavailable", { retryAfter: unavailableRetryAfter(err) });
  }
  if ("misconfigured" in answer) throw new DomainError("rate_limit_misconfigured", { details: { endpoint } });
  return answer;
}
