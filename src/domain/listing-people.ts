import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { users } from "../db/schema";
import { DomainError } from "../lib/errors";

type People = Record<string, string | null | undefined>;

/** The distinct user ids a request names, without the fields it left out. */
const namedIds = (people: People) => [...new Set(Object.values(people).filter((v): v is string => !!v))];

/** Owner and agents must be users of the calling agency's hierarchy. */
export async function checkPeople(db: Db, agencyId: string, people: People) {
  const ids = namedIds(people);
  const found = ids.length
    ? await db
        .select({ id: users.id })
        .from(users)
        .where(and(eq(users.agencyId, agencyId), inArray(users.id, ids)))
        .all()
    : [];
  const known = new Set(found.map((u) => u.id));
  const outside = Object.entries(people).filter(([, id]) => id && !known.has(id));
  if (outside.length) {
    throw new DomainError("agent_not_in_hierarchy", {
      message: `${outside.map(([field]) => field).join(", ")} must be a user of your agency hierarchy.`,
      details: { fields: outside.map(([field]) => field) },
    });
  }
}

/**
 * The listing's agency, bound only when every named person is a user of it; otherwise
 * NULL, so the insert fails its NOT NULL and the whole batch (event and mark with it)
 * rolls back. The check and the write are one statement: nobody can leave the agency
 * between them, and the create costs one D1 round trip.
 */
export function agencyOfPeople(agencyId: string, people: People) {
  const ids = namedIds(people);
  const inAgency = sql`(SELECT count(*) FROM ${users} WHERE ${users.agencyId} = ${agencyId} AND ${users.id} IN ${ids})`;
  return sql`(CASE WHEN ${inAgency} = ${ids.length} THEN ${agencyId} END)`;
}
