import { and, eq, inArray, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { listings, users } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { outboxInsertPerRow } from "../events/outbox";

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

/**
 * Hands an agency's listings over from people who left it (`leavers`, a subquery of user
 * ids): the owner and the first agent pass to `successor` (a scalar subquery naming someone
 * who stays; while it is NULL, as when nobody active is left, they stay as they were), and
 * the optional second agent is cleared. Each listing that changes emits `listing.updated`
 * to the agency, naming the fields that changed and only people of the agency. Two
 * set-based statements for the caller's batch, the events first so they see the listings
 * before the change, placed after the leavers left the agency.
 */
export function handOverListings(
  db: Db,
  agencyId: string,
  leavers: SQL,
  successor: SQL,
  at: string,
): BatchItem<"sqlite">[] {
  const left = (column: string) => sql.raw(`l.${column} IN (SELECT id FROM leavers)`);
  const handed = (column: string) =>
    sql`CASE WHEN ${left(column)} THEN coalesce((SELECT id FROM successor), l.${sql.raw(column)})
      ELSE l.${sql.raw(column)} END`;
  // Each listing of the agency that names a leaver, with the people it names now (was_…) and will name.
  const ctes = sql`leavers(id) AS (SELECT id FROM ${leavers}),
    successor(id) AS (SELECT ${successor}),
    handed AS (
      SELECT l.id, l.listing_number, l.address, l.version,
        l.owner_user_id AS was_owner, l.agent_one_id AS was_one, l.agent_two_id AS was_two,
        ${handed("owner_user_id")} AS owner, ${handed("agent_one_id")} AS agent_one,
        CASE WHEN ${left("agent_two_id")} THEN NULL ELSE l.agent_two_id END AS agent_two
      FROM ${listings} l
      WHERE l.agency_id = ${agencyId}
        AND (${left("owner_user_id")} OR ${left("agent_one_id")} OR ${left("agent_two_id")})),
    changed AS (
      SELECT * FROM handed WHERE owner IS NOT was_owner OR agent_one IS NOT was_one OR agent_two IS NOT was_two)`;
  const changedFields = sql`json((SELECT json_group_array(field) FROM (
      SELECT 'owner_user_id' AS field WHERE c.owner IS NOT c.was_owner
      UNION ALL SELECT 'agent_one_id' WHERE c.agent_one IS NOT c.was_one
      UNION ALL SELECT 'agent_two_id' WHERE c.agent_two IS NOT c.was_two)))`;
  return [
    outboxInsertPerRow(db, agencyId, "listing.updated", {
      ctes,
      data: sql`json_object('listing_number', c.listing_number, 'changed_fields', ${changedFields},
        'address', c.address, 'owner_user_id', c.owner, 'agent_one_id', c.agent_one, 'agent_two_id', c.agent_two)`,
      from: sql`FROM changed c`,
      // The events are written before the change (which empties \`changed\`); the change
      // raises each listing's version by one, in its own statement just after.
      resource: { type: "listing", id: sql`c.listing_number`, version: sql`c.version + 1` },
    }),
    db
      .update(listings)
      .set({ ownerUserId: sql`c.owner`, agentOneId: sql`c.agent_one`, agentTwoId: sql`c.agent_two`, updatedAt: at })
      .from(sql`(WITH ${ctes} SELECT id, owner, agent_one, agent_two FROM changed) AS c`)
      .where(sql`${listings}.id = c.id`),
  ];
}
