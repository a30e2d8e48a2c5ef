import { and, desc, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import {
  type DeliveryDestination,
  deliveryDestinations,
  type Listing,
  mediaDeliveries,
  mediaDeliveryFiles,
} from "../db/schema";
import { newId, nowIso } from "../lib/ids";
import { sendJob } from "./jobs";

/**
 * Where a listing's media goes: the storage of its first agent, else its second agent.
 * A listing whose agents configured no storage is not delivered.
 */
export async function destinationFor(
  db: Db,
  listing: Pick<Listing, "agencyId" | "agentOneId" | "agentTwoId">,
): Promise<DeliveryDestination | undefined> {
  for (const userId of [listing.agentOneId, listing.agentTwoId]) {
    if (!userId) continue;
    const dest = await db
      .select()
      .from(deliveryDestinations)
      .where(and(eq(deliveryDestinations.userId, userId), eq(deliveryDestinations.agencyId, listing.agencyId)))
      .get();
    if (dest) return dest;
  }
  return undefined;
}

/**
 * Files a delivery may carry. `undelivered`: completed uploads not already delivered or
 * on their way (what an upload trigger sends); `all`: every completed upload (a re-send).
 */
export type DeliveryScope = "undelivered" | "all";

const candidates = (listingId: string, scope: DeliveryScope) => sql`
  SELECT u.id FROM media_uploads u
  WHERE u.listing_id = ${listingId} AND u.status = 'completed'
  ${
    scope === "undelivered"
      ? sql`AND NOT EXISTS (SELECT 1 FROM media_delivery_files f WHERE f.upload_id = u.id AND f.status IN ('pending', 'delivered'))`
      : sql``
  }`;

export async function hasCandidates(db: Db, listingId: string, scope: DeliveryScope): Promise<boolean> {
  const rows = await db.all(sql`${candidates(listingId, scope)} LIMIT 1`);
  return rows.length > 0;
}

/**
 * The statements that create a delivery and claim its files, for one `db.batch`. The
 * delivery row exists only if there is something to carry, and files are claimed in the
 * same statement that reads them, so two concurrent triggers never carry the same file.
 */
export function createDeliveryStatements(
  db: Db,
  d: {
    id: string;
    agencyId: string;
    listingId: string;
    destinationUserId: string;
    trigger: "upload" | "manual";
    scope: DeliveryScope;
  },
): BatchItem<"sqlite">[] {
  const now = nowIso();
  // INSERT … SELECT lists every column of the table, in table order.
  return [
    db.insert(mediaDeliveries).select(
      sql`SELECT ${d.id}, ${d.agencyId}, ${d.listingId}, ${d.destinationUserId}, ${d.trigger}, 'queued', 0, 0, 0, 0, NULL, NULL, ${now}, ${now}
          WHERE EXISTS (${candidates(d.listingId, d.scope)})`,
    ),
    db.insert(mediaDeliveryFiles).select(
      sql`SELECT ${d.id}, c.id, 'pending', 0, NULL, ${now} FROM (${candidates(d.listingId, d.scope)}) c
          WHERE EXISTS (SELECT 1 FROM media_deliveries WHERE id = ${d.id})`,
    ),
    db
      .update(mediaDeliveries)
      .set({ filesTotal: sql`(SELECT count(*) FROM media_delivery_files WHERE delivery_id = ${d.id})` })
      .where(eq(mediaDeliveries.id, d.id)),
  ];
}

/**
 * Prepares a delivery of a listing to its agent's storage: sends the job first, then
 * hands back the statements that record it, to be committed with the caller's change.
 * Undefined when no agent of the listing configured storage.
 */
export async function prepareDelivery(
  env: Env,
  db: Db,
  listing: Pick<Listing, "id" | "agencyId" | "agentOneId" | "agentTwoId">,
  trigger: "upload" | "manual",
  scope: DeliveryScope,
): Promise<{ deliveryId: string; statements: BatchItem<"sqlite">[] } | undefined> {
  const destination = await destinationFor(db, listing);
  if (!destination) return undefined;
  const deliveryId = newId("dlv");
  await sendJob(env.MEDIA_QUEUE, { kind: "delivery", delivery_id: deliveryId });
  const statements = createDeliveryStatements(db, {
    id: deliveryId,
    agencyId: listing.agencyId,
    listingId: listing.id,
    destinationUserId: destination.userId,
    trigger,
    scope,
  });
  return { deliveryId, statements };
}

export async function deliveriesOf(db: Db, listingId: string) {
  return db
    .select()
    .from(mediaDeliveries)
    .where(eq(mediaDeliveries.listingId, listingId))
    .orderBy(desc(mediaDeliveries.createdAt))
    .all();
}
