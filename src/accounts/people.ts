import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import type { User } from "../db/schema";
import { ownerOf, shardDb, shardOfEnv } from "../db/shards";
import { changeManager, changeManagerAcross, deactivateUser as deactivateInAgency } from "../domain/people/moves";
import { isPlatformRole } from "../domain/roles";
import { refreshKeysMintedBy } from "./key-changes";

/*
 * Changes to people, done once for every caller (the dashboard's routes, the sandbox's
 * helpers): the domain writes the change and all it carries in one batch, then the gate of
 * every key the people minted is told, page by page, so those keys are decided on the new
 * state from the very next request. The gates are told even when nothing changed, so
 * repeating a call whose notice was cut short completes it.
 */

/**
 * Moves a user and their subtree under another manager, possibly in another agency, and so
 * possibly onto another shard (`changeManagerAcross`).
 */
export async function moveUser(
  env: Env,
  db: Db,
  userId: string,
  managerId: string | null,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<User> {
  const across = managerId ? await ownerOf(env, "user", managerId) : undefined;
  const moved =
    across && across.shard !== shardOfEnv(env)
      ? await changeManagerAcross(db, shardDb(env, across.shard), userId, managerId!, alsoWrite)
      : await changeManager(db, userId, managerId, alsoWrite);
  await refreshKeysMintedBy(env, db, moved.id, { subtree: true, everyShard: isPlatformRole(moved.role) });
  return moved;
}

/** Deactivates or suspends a user. */
export async function deactivateUser(
  env: Env,
  db: Db,
  userId: string,
  reason?: "deactivated" | "suspended",
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<User> {
  const user = await deactivateInAgency(db, userId, reason, alsoWrite);
  await refreshKeysMintedBy(env, db, user.id, { subtree: false, everyShard: isPlatformRole(user.role) });
  return user;
}
