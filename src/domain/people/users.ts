import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { keysetPage, type PageRequest } from "../../db/pages";
import { type User, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";

/** A user of the agency; any other user (another agency's, or none) is `user_not_found`. */
export async function userOfAgency(db: Db, agencyId: string, userId: string): Promise<User> {
  const user = await db
    .select()
    .from(users)
    .where(and(eq(users.id, userId), eq(users.agencyId, agencyId)))
    .get();
  if (!user) throw new DomainError("user_not_found");
  return user;
}

/** The version of the agency's user with this id, or undefined: one indexed read of one column. */
export async function userVersion(db: Db, agencyId: string, userId: string): Promise<number | undefined> {
  const row = await db
    .select({ version: users.version })
    .from(users)
    .where(and(eq(users.id, userId), eq(users.agencyId, agencyId)))
    .get();
  return row?.version;
}

/** An active user of the agency, the only subject whose calendar the agency may read. */
export async function activeUserOfAgency(db: Db, agencyId: string, userId: string): Promise<User> {
  const user = await userOfAgency(db, agencyId, userId);
  if (!user.isActive) throw new DomainError("user_not_found");
  return user;
}

/** The agency's users, oldest first, optionally by role and state. */
export function pageUsers(db: Db, agencyId: string, filters: { role?: string; isActive?: boolean }, req: PageRequest) {
  const active = filters.isActive === undefined ? "" : String(filters.isActive);
  const where = and(
    eq(users.agencyId, agencyId),
    filters.role ? eq(users.role, filters.role) : undefined,
    filters.isActive === undefined ? undefined : eq(users.isActive, filters.isActive),
  );
  return keysetPage(db, users, `users:${agencyId}:${filters.role ?? ""}:${active}`, where, req);
}

/** Every user of an agency, for the dashboard. */
export function pageAgencyUsers(db: Db, agencyId: string, req: PageRequest) {
  return keysetPage(db, users, `internal-users:${agencyId}`, eq(users.agencyId, agencyId), req);
}
