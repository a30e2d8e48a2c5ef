import { and, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { type Agency, agencies, agencyShards, type User, users } from "../../db/schema";
import { CONTROL_SHARD } from "../../db/shards";
import { DomainError } from "../../lib/errors";
import { newId } from "../../lib/ids";
import { isUniqueViolation } from "../constraint";
import { outboxInsert } from "../events/outbox";
import { quotaRefusal } from "../quotas";
import { AGENCY_OWNER_ROLES, AGENCY_ROLES, PLATFORM_ROLES, type Role } from "../roles";

export interface NewAgency {
  name: string;
  kind: Agency["kind"];
  cancellationNoticeHours?: number;
}

/**
 * Creates an agency on the control database, which is also the first shard: its row and its
 * place in the map of shards, in one batch. `placeAgency` puts one on another shard.
 */
export async function createAgency(db: Db, input: NewAgency): Promise<Agency> {
  const id = newId("agy");
  const [[agency]] = await db.batch([
    db.insert(agencies).values(agencyRow(id, input)).returning(),
    db.insert(agencyShards).values({ agencyId: id, shard: CONTROL_SHARD }),
  ]);
  return agency!;
}

export const agencyRow = (id: string, input: NewAgency) => ({
  id,
  name: input.name,
  kind: input.kind,
  cancellationNoticeHours: input.cancellationNoticeHours ?? 24,
});

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

export function checkRoleFits(role: Role, agency: Agency, managerId: string | null) {
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

export async function activeManager(db: Db, managerId: string): Promise<User> {
  const manager = await db.select().from(users).where(eq(users.id, managerId)).get();
  if (!manager?.isActive) throw new DomainError("manager_not_found", { details: { manager_id: managerId } });
  return manager;
}

/**
 * Provisions a user. With a manager the user joins the manager's agency; without one it
 * heads a hierarchy of the given agency. Emits `user.signed_up` in the same batch. An
 * email is unique within the agency only, so the answer never depends on other agencies.
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
      throw new DomainError("user_email_taken", {
        message: "A user of this agency already has this email.",
        details: { email: input.email.toLowerCase() },
      });
    return quotaRefusal(db, agencyId, err);
  }
}

/** The user and everyone below them, as a subquery: one bound parameter however large the subtree. */
export const subtreeOf = (userId: string) => sql`(
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
export async function inSubtree(db: Db, userId: string, candidateId: string): Promise<boolean> {
  const row = await db
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.id, candidateId), inArray(users.id, subtreeOf(userId))))
    .get();
  return row !== undefined;
}
