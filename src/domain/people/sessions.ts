import { and, desc, eq, gt, inArray, isNull, lte, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { sessions } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso, randomToken, sha256Hex } from "../../lib/ids";
import { getUserById } from "./hierarchy";

const SESSION_TTL_MS = 12 * 60 * 60 * 1000;
/** The longest a session may be asked to live: a day. A longer sign-in signs in again. */
export const SESSION_MAX_TTL_MINUTES = 24 * 60;
/** The most live sessions one listing shows, newest first. */
export const SESSION_LIST_LIMIT = 100;

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

export interface LiveSession {
  sessionId: string;
  createdAt: string;
  expiresAt: string;
}

/**
 * A user's live sessions (neither revoked nor expired), newest first, at most
 * SESSION_LIST_LIMIT; `more` when the user has others. 404 for an unknown user.
 */
export async function liveSessions(db: Db, userId: string): Promise<{ sessions: LiveSession[]; more: boolean }> {
  await getUserById(db, userId);
  const rows = await db
    .select({ sessionId: sessions.tokenHash, createdAt: sessions.createdAt, expiresAt: sessions.expiresAt })
    .from(sessions)
    .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.expiresAt, nowIso())))
    .orderBy(desc(sessions.createdAt), desc(sessions.tokenHash))
    .limit(SESSION_LIST_LIMIT + 1);
  return { sessions: rows.slice(0, SESSION_LIST_LIMIT), more: rows.length > SESSION_LIST_LIMIT };
}

/**
 * Revokes every live session of a user in one statement (signing out everywhere, after a
 * lost laptop or a leaked cookie): each cookie is refused from the next request. Answers
 * how many were live. 404 for an unknown user.
 */
export async function revokeUserSessions(db: Db, userId: string): Promise<number> {
  await getUserById(db, userId);
  const at = nowIso();
  const revoked = await db
    .update(sessions)
    .set({ revokedAt: at, expiresAt: at })
    .where(and(eq(sessions.userId, userId), isNull(sessions.revokedAt), gt(sessions.expiresAt, at)))
    .returning({ sessionId: sessions.tokenHash });
  return revoked.length;
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
