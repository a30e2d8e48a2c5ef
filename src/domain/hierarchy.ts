import { and, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { type Agency, agencies, type User, users } from "../db/schema";
import { DomainError } from "../lib/errors";
import { newId, nowIso } from "../lib/ids";
import { isUniqueViolation } from "./constraint";
import { outboxInsert, outboxInsertIfChanged } from "./outbox";
import { quotaRefusal } from "./quotas";
import { AGENCY_OWNER_ROLES, AGENCY_ROLES, PLATFORM_ROLES, type Role } from "./roles";

export async function createAgency(
  db: Db,
  input: { name: string; kind: Agency["kind"]; cancellationNoticeHours?: number },
): Promise<Agency> {
  const [agency] = await db
    .insert(agencies)
    .values({
      id: newId("agy"),
      name: input.name,
      kind: input.kind,
      cancellationNoticeHours: input.cancellationNoticeHours ?? 24,
    })
    .returning();
  return agency!;
}

export async function getAgency(db: Db, id: string): Promise<Agency> {
  const agency = await db.select().from(agencies).where(eq(agencies.id, id)).get();
  if (!agency) throw new DomainError("agency_not_found");
  return agency;
}

export async function getUserById(db: Db, id: string): Promise<User> {
  const user = await db.select().from(users).where(eq(users.id, id)).get();
  if (!user) throw new DomainError("user_not_found");
  return user;
}

function checkRoleFits(role: Role, agency: Agency, managerId: string | null) {
  const platform = agency.kind === "platform";
  if (platform !== (PLATFORM_ROLES as readonly string[]).includes(role)) {
    throw new DomainError("invalid_role", {
      message: platform
        ? "Platform staff have the role super_admin or admin."
        : `Agency users have one of: ${AGENCY_ROLES.join(", ")}.`,
      details: { role },
    });
  }
  if (!platform && managerId === null && !(AGENCY_OWNER_ROLES as readonly string[]).includes(role)) {
    throw new DomainError("invalid_role", {
      message: "The top of an agency hierarchy is a media_agency or broker user; other roles need a manager.",
      details: { role },
    });
  }
}

async function activeManager(db: Db, managerId: string): Promise<User> {
  const manager = await db.select().from(users).where(eq(users.id, managerId)).get();
  if (!manager?.isActive) throw new DomainError("manager_not_found", { details: { manager_id: managerId } });
  return manager;
}

/**
 * Provisions a user. With a manager the user joins the manager's agency; without one it
 * heads a hierarchy of the given agency. Emits `user.signed_up` in the same batch.
 */
export async function createUser(
  db: Db,
  input: {
    agencyId?: string;
    managerId?: string | null;
    role: Role;
    name: string;
    email: string;
    source?: "admin_create" | "invite";
  },
  alsoWrite: (user: { id: string }) => BatchItem<"sqlite">[] = () => [],
): Promise<User> {
  const manager = input.managerId ? await activeManager(db, input.managerId) : undefined;
  const agencyId = manager?.agencyId ?? input.agencyId;
  if (!agencyId)
    throw new DomainError("validation_missing_required", {
      message: "agency_id is required for a user without a manager.",
      details: { errors: [{ field: "agency_id", code: "validation_missing_required" }] },
    });
  if (manager && input.agencyId && input.agencyId !== manager.agencyId) {
    throw new DomainError("manager_not_found", {
      message: "The manager belongs to another agency than agency_id.",
      details: { manager_id: manager.id },
    });
  }
  const agency = await getAgency(db, agencyId);
  checkRoleFits(input.role, agency, manager?.id ?? null);
  const id = newId("usr");
  const insert = db
    .insert(users)
    .values({
      id,
      agencyId,
      role: input.role,
      managerId: manager?.id ?? null,
      name: input.name,
      email: input.email.toLowerCase(),
    })
    .returning();
  try {
    const [[user]] = await db.batch([
      insert,
      outboxInsert(db, agencyId, "user.signed_up", {
        user_id: id,
        role: input.role,
        managerId: manager?.id ?? null,
        source: input.source ?? "admin_create",
      }),
      ...alsoWrite({ id }),
    ]);
    return user!;
  } catch (err) {
    if (isUniqueViolation(err, "email"))
      throw new DomainError("user_email_taken", { details: { email: input.email.toLowerCase() } });
    return quotaRefusal(db, agencyId, err);
  }
}

/** The user and everyone below them, as a subquery: one bound parameter however large the subtree. */
const subtreeOf = (userId: string) => sql`(
  WITH RECURSIVE tree(id) AS (SELECT ${userId} UNION SELECT u.id FROM users u JOIN tree t ON u.manager_id = t.id)
  SELECT id FROM tree)`;

/** The longest manager chain walked up from a user: a cycle or a deeper hierarchy stops there. */
const MAX_MANAGER_CHAIN = 64;

/**
 * The user and their managers, nearest first, as a subquery of (id, depth) to alias: one
 * statement however deep the hierarchy, held to the agency at every step and to
 * `MAX_MANAGER_CHAIN` rows (a cycle repeats ids up to that depth; keep each one's first row).
 */
export const managerChainOf = (agencyId: string, userId: string) => sql`(
  WITH RECURSIVE chain(id, manager_id, depth) AS (
    SELECT id, manager_id, 0 FROM users WHERE id = ${userId} AND agency_id = ${agencyId}
    UNION ALL
    SELECT u.id, u.manager_id, c.depth + 1 FROM users u JOIN chain c ON u.id = c.manager_id
    WHERE u.agency_id = ${agencyId} AND c.depth < ${MAX_MANAGER_CHAIN - 1})
  SELECT id, depth FROM chain)`;

/** True when `candidateId` is the user or sits anywhere below them. */
async function inSubtree(db: Db, userId: string, candidateId: string): Promise<boolean> {
  const row = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.id, candidateId), inArray(users.id, subtreeOf(userId))))
    .get();
  return row !== undefined;
}

/**
 * Moves a user under another manager, possibly in another agency: the user's whole
 * subtree moves with it. `user.hierarchy_changed` is scoped to the new owning agency.
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
      previous_manager_id: user.managerId,
      agency_changed: agencyId !== user.agencyId,
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
