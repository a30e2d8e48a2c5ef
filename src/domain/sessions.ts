import type { Db } from "../db/client";
import { sessions } from "../db/schema";
import { DomainError } from "../lib/errors";
import { nowIso, randomToken, sha256Hex } from "../lib/ids";
import { getUserById } from "./hierarchy";

const SESSION_TTL_MS = 12 * 60 * 60 * 1000;

/** A dashboard session for a user: the token is returned once, only its hash is stored. */
export async function createSession(
  db: Db,
  userId: string,
  ttlMs = SESSION_TTL_MS,
): Promise<{ token: string; expiresAt: string }> {
  const user = await getUserById(db, userId);
  if (!user.isActive) throw new DomainError("user_not_found", { message: "The user is deactivated." });
  const token = randomToken(32);
  const expiresAt = nowIso(Date.now() + ttlMs);
  await db.insert(sessions).values({ tokenHash: await sha256Hex(token), userId, expiresAt });
  return { token, expiresAt };
}
