import { and, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { calendarConnections, deliveryDestinations, sandboxCalendarBlocks, type User, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";
import { isUniqueViolation } from "../constraint";
import { outboxInsert, outboxInsertIfChanged } from "../events/outbox";
import { handOverListings } from "../listings/people";
import type { Role } from "../roles";
import { nextVersion } from "../versions";
import {
  activeManager,
  checkRoleFits,
  getAgency,
  getUserById,
  inSubtree,
  managerChainOf,
  subtreeOf,
} from "./hierarchy";

/**
 * Who takes over an agency's listings from people who left it, as a scalar subquery: the
 * nearest active manager they left behind (from the mover's previous manager up), else the
 * agency's first active owner; NULL when nobody active is left.
 */
function successorIn(agencyId: string, previousManagerId: string | null) {
  const nearest = previousManagerId
    ? sql`(SELECT chain.id FROM ${managerChainOf(agencyId, previousManagerId)} AS chain
        JOIN ${users} s ON s.id = chain.id WHERE s.is_active = 1 ORDER BY chain.depth LIMIT 1)`
    : sql`NULL`;
  return sql`coalesce(${nearest}, (SELECT id FROM ${users}
    WHERE agency_id = ${agencyId} AND manager_id IS NULL AND is_active = 1 ORDER BY created_at, id LIMIT 1))`;
}

/**
 * What a subtree that leaves `agencyId` leaves behind, as statements for the move's batch,
 * after the users moved. The storage destinations, calendars and sandbox busy blocks they set
 * up there are dropped: their credentials were given for that agency and are sealed to it, so
 * they neither carry the old agency's media or shoots any more nor answer for the new one. The
 * agency's listings that name them are handed over (`handOverListings`). One bound parameter
 * names the subtree, however large.
 */
function leaveAgency(db: Db, agencyId: string, userId: string, previousManagerId: string | null, at: string) {
  const leavers = subtreeOf(userId);
  return [
    db
      .delete(deliveryDestinations)
      .where(and(eq(deliveryDestinations.agencyId, agencyId), inArray(deliveryDestinations.userId, leavers))),
    db
      .delete(calendarConnections)
      .where(and(eq(calendarConnections.agencyId, agencyId), inArray(calendarConnections.userId, leavers))),
    db
      .delete(sandboxCalendarBlocks)
      .where(and(eq(sandboxCalendarBlocks.agencyId, agencyId), inArray(sandboxCalendarBlocks.userId, leavers))),
    ...handOverListings(db, agencyId, leavers, successorIn(agencyId, previousManagerId), at),
  ];
}

/**
 * Moves a user under another manager, possibly in another agency: the user's whole
 * subtree moves with it, in one batch with everything the move changes. `user.hierarchy_changed`
 * is scoped to the new owning agency and carries only what it may see: after a move across
 * agencies, `previous_manager_id` (a user of the old agency) is null. Leaving an agency drops
 * or hands over what the movers had there (`leaveAgency`); the old agency hears of it through
 * `listing.updated` on each listing handed over, since the spec sends `user.hierarchy_changed`
 * to the new agency only and the movers are not deactivated.
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
  const moving = db.batch([
    db
      .update(users)
      .set({ managerId: manager?.id ?? null, agencyId, updatedAt: at, version: nextVersion(users.version) })
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
    ...(leaving ? leaveAgency(db, user.agencyId, userId, user.managerId, at) : []),
    ...alsoWrite,
  ]);
  // Emails are unique within an agency: a move into an agency that has one of the subtree's is refused whole.
  const [[moved]] = await moving.catch((err: unknown) => {
    if (isUniqueViolation(err, "email"))
      throw new DomainError("user_email_taken", {
        message: "A user of the subtree has an email that a user of the new agency already has.",
      });
    throw err;
  });
  return moved!;
}

/**
 * Deactivates (or suspends) a user once; a repeat changes nothing and emits nothing. The user
 * stays in the agency, so what they set up there (storage, calendar) and the listings that
 * name them stay the agency's to change in the dashboard; only their keys stop working.
 */
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
