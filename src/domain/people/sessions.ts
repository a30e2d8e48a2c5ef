import { eq, inArray, lte, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { sessions } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso, randomToken, sha256Hex } from "../../lib/ids";
import { getUserById } from "./hierarchy";

const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** A dashboard session for a user: the token is returned once, only its hash is stored. */
export async function createSession(
  db: Db,
  userId: string,
  ttlMs = SESSION_TTL_MS,
): Promise<{ token: string; sessionId: string; expiresAt: string }> {
  const user = await getUserById(db, userId);
  if (!user.isActive) throw new DomainError("user_not_found", { message: "The user is deactivated." });
  const token = randomToken(32);
  const expiresAt = nowIso(Date.now() + ttlMs);
  const sessionId = await sha256Hex(token);
  await db.insert(sessions).values({ tokenHash: sessionId, userId, expiresAt });
  return { token, sessionId, expiresAt };
}

/**
 * Revokes a session by its id (the SHA-256 of its token): its cookie is refused from the
 * next request. It also expires now, so the nightly purge removes it. An unknown or
 * already revoked session changes nothing.
 */
export async function revokeSession(db: Db, sessionId: string): Promise<void> {
  const at = nowIso();
  await db
    .update(sessions)
    .set({ revokedAt: sql`coalesce(${sessions.revokedAt}, ${at})`, expiresAt: sql`min(${sessions.expiresAt}, ${at})` })
    .where(eq(sessions.tokenHash, sessionId));
}

/** Sessions deleted by one statement at most. */
const SESSION_PURGE_PAGE = 500;
/** Statements one nightly run spends at most (10,000 sessions); what is left waits for the next night. */
const SESSION_PURGE_MAX_PAGES = 20;

/** Deletes expired (and so revoked) sessions, a page per statement, up to `maxPages` statements. */
export async function purgeSessions(
  db: Db,
  nowMs = Date.now(),
  maxPages = SESSION_PURGE_MAX_PAGES,
): Promise<{ deleted: number; statements: number }> {
  const page = db
    .select({ tokenHash: sessions.tokenHash })
    .from(sessions)
    .where(lte(sessions.expiresAt, nowIso(nowMs)))
    .limit(SESSION_PURGE_PAGE);
  let deleted = 0;
  let statements = 0;
  while (statements < maxPages) {
    const changes = (await db.delete(sessions).where(inArray(sessions.tokenHash, page)).run()).meta.changes;
    statements++;
    deleted += changes;
    if (changes < SESSION_PURGE_PAGE) break;
  }
  return { deleted, statements };
}
