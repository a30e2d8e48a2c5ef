import { and, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import {
  agencies,
  agencyUsage,
  calendarConnections,
  deliveryDestinations,
  sandboxCalendarBlocks,
  sessions,
  type User,
  users,
} from "../../db/schema";
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
 * Moves a user and their subtree under a manager of an agency on another shard (`target`; the
 * user's own is `source`), with the guarantees of a move inside one shard: the new agency's
 * shard gets the movers' rows (and their sessions) first, with `user.hierarchy_changed`; then,
 * in one batch on the old shard, they leave their agency as `changeManager` leaves it. Their rows
 * stay on the old shard too, now naming the new agency, so the old agency's keys they minted
 * still name their minter (and are refused, as after any move out of the agency). A failure
 * between the two batches leaves the movers in both agencies; repeating the move completes it.
 */
export async function changeManagerAcross(
  source: Db,
  target: Db,
  userId: string,
  managerId: string,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<User> {
  const user = await getUserById(source, userId);
  const manager = await activeManager(target, managerId);
  const agency = await getAgency(target, manager.agencyId);
  checkRoleFits(user.role as Role, agency, manager.id);
  const movers = await source
    .select()
    .from(users)
    .where(inArray(users.id, subtreeOf(userId)))
    .all();
  const ids = JSON.stringify(movers.map((m) => m.id));
  const clash = await target
    .select({ id: users.id })
    .from(users)
    .where(
      and(
        eq(users.agencyId, agency.id),
        sql`${users.email} IN (SELECT value FROM json_each(${JSON.stringify(movers.map((m) => m.email))}))`,
        sql`${users.id} NOT IN (SELECT value FROM json_each(${ids}))`,
      ),
    )
    .get();
  if (clash)
    throw new DomainError("user_email_taken", {
      message: "A user of the subtree has an email that a user of the new agency already has.",
    });
  const moverSessions = await source
    .select()
    .from(sessions)
    .where(sql`${sessions.userId} IN (SELECT value FROM json_each(${ids}))`)
    .all();
  const at = nowIso();
  const arriving = movers.map((m) =>
    m.id === userId
      ? { ...m, agencyId: agency.id, managerId: manager.id, updatedAt: at, version: m.version + 1 }
      : { ...m, agencyId: agency.id, updatedAt: at },
  );
  const [moved] = arriving;
  await target.batch([
    outboxInsert(target, agency.id, "user.hierarchy_changed", {
      user_id: userId,
      managerId: manager.id,
      previous_manager_id: null,
      agency_changed: true,
    }),
    ...arriving.map((row) =>
      target
        .insert(users)
        .values(row)
        .onConflictDoUpdate({ target: users.id, set: withoutId(row) }),
    ),
    ...moverSessions.map((row) => target.insert(sessions).values(row).onConflictDoNothing()),
  ]);
  await source.batch([
    // The rows left behind name the new agency, whose own row is copied here for them to name.
    source.insert(agencies).values(agency).onConflictDoNothing(),
    source
      .update(users)
      .set({ managerId: manager.id, agencyId: agency.id, updatedAt: at, version: nextVersion(users.version) })
      .where(and(eq(users.id, userId), sql`${users.agencyId} <> ${agency.id}`)),
    source
      .update(users)
      .set({ agencyId: agency.id, updatedAt: at })
      .where(and(inArray(users.id, subtreeOf(userId)), sql`${users.agencyId} <> ${agency.id}`)),
    ...leaveAgency(source, user.agencyId, userId, user.managerId, at),
    source.delete(sessions).where(sql`${sessions.userId} IN (SELECT value FROM json_each(${ids}))`),
    // The new agency's count of users lives on its own shard.
    source.delete(agencyUsage).where(and(eq(agencyUsage.agencyId, agency.id), eq(agencyUsage.resource, "users"))),
    ...alsoWrite,
  ]);
  return getUserById(target, moved!.id);
}

const withoutId = <T extends { id: string }>(row: T): Omit<T, "id"> => {
  const { id: _, ...rest } = row;
  return rest;
};

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
