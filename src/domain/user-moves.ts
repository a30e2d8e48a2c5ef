import { and, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { type User, users } from "../db/schema";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";
import { activeManager, checkRoleFits, getAgency, getUserById, inSubtree, subtreeOf } from "./hierarchy";
import { outboxInsert, outboxInsertIfChanged } from "./outbox";
import type { Role } from "./roles";

/**
 * Moves a user under another manager, possibly in another agency: the user's whole
 * subtree moves with it. `user.hierarchy_changed` is scoped to the new owning agency and
 * carries only what it may see: after a move across agencies, `previous_manager_id` (a
 * user of the old agency) is null.
 */
export async function changeManager(
  db: Db,
  userId: string,
  managerId: string | null,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<User> {
  const user = await getUserById(db, userId);
  if (user.managerId === managerId) return user;
  const manager = managerId ? await activeManager(db, managerId) : undefined;
  if (manager && (await inSubtree(db, userId, manager.id)))
    throw new DomainError("hierarchy_cycle", { details: { manager_id: manager.id } });
  const agencyId = manager?.agencyId ?? user.agencyId;
  checkRoleFits(user.role as Role, await getAgency(db, agencyId), manager?.id ?? null);
  const leaving = agencyId !== user.agencyId;
  const at = nowIso();
  const [[moved]] = await db.batch([
    db
      .update(users)
      .set({ managerId: manager?.id ?? null, agencyId, updatedAt: at })
      .where(eq(users.id, userId))
      .returning(),
    db
      .update(users)
      .set({ agencyId, updatedAt: at })
      .where(and(inArray(users.id, subtreeOf(userId)), sql`${users.agencyId} <> ${agencyId}`)),
    outboxInsert(db, agencyId, "user.hierarchy_changed", {
      user_id: userId,
      managerId: manager?.id ?? null,
      previous_manager_id: leaving ? null : user.managerId,
      agency_changed: leaving,
    }),
    ...alsoWrite,
  ]);
  return moved!;
}

/** Deactivates (or suspends) a user once; a repeat changes nothing and emits nothing. */
export async function deactivateUser(
  db: Db,
  userId: string,
  reason: "deactivated" | "suspended" = "deactivated",
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<User> {
  const user = await getUserById(db, userId);
  if (!user.isActive) return user;
  await db.batch([
    db
      .update(users)
      .set({ isActive: false, updatedAt: nowIso() })
      .where(and(eq(users.id, userId), eq(users.isActive, true))),
    outboxInsertIfChanged(db, user.agencyId, "user.deactivated", { user_id: userId, reason }),
    ...alsoWrite,
  ]);
  return getUserById(db, userId);
}
