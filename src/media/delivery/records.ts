import { and, asc, desc, eq, inArray, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import {
  type DeliveryDestination,
  deliveryDestinations,
  type Listing,
  type MediaDelivery,
  type MediaDeliveryFile,
  mediaDeliveries,
  mediaDeliveryFiles,
  users,
} from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { newId, nowIso } from "../../lib/ids";
import { sendJob } from "../jobs";

/**
 * Where a listing's media goes: the storage of its first agent, else its second agent,
 * while that agent is a user of the listing's agency (a destination saved while its user
 * moved to another agency is never used for the old one's media). A listing whose agents
 * configured no storage is not delivered.
 */
export async function destinationFor(
  db: Db,
  listing: Pick<Listing, "agencyId" | "agentOneId" | "agentTwoId">,
): Promise<DeliveryDestination | undefined> {
  for (const userId of [listing.agentOneId, listing.agentTwoId]) {
    if (!userId) continue;
    const row = await db
      .select({ dest: deliveryDestinations })
      .from(deliveryDestinations)
      .innerJoin(users, and(eq(users.id, deliveryDestinations.userId), eq(users.agencyId, listing.agencyId)))
      .where(and(eq(deliveryDestinations.userId, userId), eq(deliveryDestinations.agencyId, listing.agencyId)))
      .get();
    if (row) return row.dest;
  }
  return undefined;
}

/**
 * Files a delivery may carry. `undelivered`: completed uploads not already delivered or
 * on their way (what an upload trigger sends); `all`: every completed upload (a re-send).
 */
type DeliveryScope = "undelivered" | "all";

const candidates = (listingId: string, scope: DeliveryScope) => sql`
  SELECT u.id FROM media_uploads u
  WHERE u.listing_id = ${listingId} AND u.status = 'completed'
  ${
    scope === "undelivered"
      ? sql`AND NOT EXISTS (SELECT 1 FROM media_delivery_files f
          WHERE f.upload_id = u.id AND f.status IN ('pending', 'delivered'))`
      : sql``
  }`;

async function hasCandidates(db: Db, listingId: string, scope: DeliveryScope): Promise<boolean> {
  const rows = await db.all(sql`${candidates(listingId, scope)} LIMIT 1`);
  return rows.length > 0;
}

/**
 * The statements that create a delivery and claim its files, for one `db.batch`. The
 * delivery row exists only if there is something to carry, and files are claimed in the
 * same statement that reads them, so two concurrent triggers never carry the same file.
 */
function createDeliveryStatements(
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
      sql`SELECT ${d.id}, ${d.agencyId}, ${d.listingId}, ${d.destinationUserId}, ${d.trigger},
            'queued', 0, 0, 0, 0, NULL, NULL, ${now}, ${now}
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

/** A delivery with the files it carries, each with its own outcome. */
export type DeliveryWithFiles = MediaDelivery & { files: MediaDeliveryFile[] };

const withFiles = (deliveries: MediaDelivery[], files: MediaDeliveryFile[]): DeliveryWithFiles[] => {
  const byDelivery = new Map<string, MediaDeliveryFile[]>();
  for (const f of files) {
    const ofDelivery = byDelivery.get(f.deliveryId);
    if (ofDelivery) ofDelivery.push(f);
    else byDelivery.set(f.deliveryId, [f]);
  }
  return deliveries.map((d) => ({ ...d, files: byDelivery.get(d.id) ?? [] }));
};

/**
 * The listing's deliveries, newest first, with their files. The files are read by the
 * listing in the same batch, not delivery by delivery, so the statement binds the same
 * two parameters however many deliveries the listing has.
 */
export async function deliveriesOf(db: Db, listing: Pick<Listing, "id" | "agencyId">): Promise<DeliveryWithFiles[]> {
  const ofListing = and(eq(mediaDeliveries.listingId, listing.id), eq(mediaDeliveries.agencyId, listing.agencyId));
  const [deliveries, files] = await db.batch([
    db.select().from(mediaDeliveries).where(ofListing).orderBy(desc(mediaDeliveries.createdAt)),
    db
      .select()
      .from(mediaDeliveryFiles)
      .where(
        inArray(
          mediaDeliveryFiles.deliveryId,
          db.select({ id: mediaDeliveries.id }).from(mediaDeliveries).where(ofListing),
        ),
      )
      .orderBy(asc(mediaDeliveryFiles.deliveryId), asc(mediaDeliveryFiles.uploadId)),
  ]);
  return withFiles(deliveries, files);
}

/** A delivery by id, held to the agency, with its files; undefined when it is not the agency's. */
async function deliveryOfAgency(db: Db, agencyId: string, id: string): Promise<DeliveryWithFiles | undefined> {
  const [deliveries, files] = await db.batch([
    db
      .select()
      .from(mediaDeliveries)
      .where(and(eq(mediaDeliveries.id, id), eq(mediaDeliveries.agencyId, agencyId))),
    db
      .select()
      .from(mediaDeliveryFiles)
      .where(eq(mediaDeliveryFiles.deliveryId, id))
      .orderBy(asc(mediaDeliveryFiles.uploadId)),
  ]);
  return withFiles(deliveries, files)[0];
}

/**
 * A delivery of the listing's media asked for in the dashboard. Refuses when no agent of
 * the listing configured storage (`delivery_destination_not_found`) and when the scope
 * leaves nothing to carry (`nothing_to_deliver`).
 */
export async function deliverListingMedia(
  env: Env,
  db: Db,
  listing: Pick<Listing, "id" | "agencyId" | "agentOneId" | "agentTwoId">,
  scope: DeliveryScope,
): Promise<DeliveryWithFiles> {
  if (!(await destinationFor(db, listing)))
    throw new DomainError("delivery_destination_not_found", {
      details: { agent_ids: [listing.agentOneId, listing.agentTwoId].filter(Boolean) },
    });
  if (!(await hasCandidates(db, listing.id, scope)))
    throw new DomainError("nothing_to_deliver", { details: { scope } });
  const prepared = await prepareDelivery(env, db, listing, "manual", scope);
  if (!prepared) throw new DomainError("delivery_destination_not_found");
  const [first, ...rest] = prepared.statements;
  await db.batch([first!, ...rest]);
  const delivery = await deliveryOfAgency(db, listing.agencyId, prepared.deliveryId);
  // Another trigger claimed the files between the check and the batch.
  if (!delivery) throw new DomainError("nothing_to_deliver", { details: { scope } });
  return delivery;
}
