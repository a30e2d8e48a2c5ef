import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { keysetPage, type Page, type PageRequest } from "../../db/pages";
import { type Listing, listings, type MediaDelivery, type MediaUpload, mediaUploads } from "../../db/schema";
import { DomainError } from "../../lib/errors";

/** The latest delivery that carried an upload, and how that file fared in it. */
export interface LatestDelivery {
  deliveryId: string;
  deliveryStatus: MediaDelivery["status"];
  fileStatus: "pending" | "delivered" | "failed";
  error: string | null;
  updatedAt: string;
}

/** An upload as its owner reads it: the row, its listing's number and its latest delivery. */
export interface UploadView {
  upload: MediaUpload;
  listingNumber: string | null;
  delivery: LatestDelivery | null;
}

/**
 * The latest delivery of each upload named, held to the agency in the statement. One row
 * per upload however often it was re-sent: the newest delivery, by window function.
 */
async function latestDeliveries(db: Db, agencyId: string, uploadIds: string[]) {
  const latest = new Map<string, LatestDelivery>();
  if (!uploadIds.length) return latest;
  const rows = await db.all<{
    upload_id: string;
    delivery_id: string;
    delivery_status: MediaDelivery["status"];
    file_status: LatestDelivery["fileStatus"];
    error: string | null;
    updated_at: string;
  }>(sql`
    SELECT upload_id, delivery_id, delivery_status, file_status, error, updated_at FROM (
      SELECT f.upload_id, d.id AS delivery_id, d.status AS delivery_status, f.status AS file_status,
        f.error, f.updated_at,
        row_number() OVER (PARTITION BY f.upload_id ORDER BY d.created_at DESC, d.id DESC) AS n
      FROM media_delivery_files f JOIN media_deliveries d ON d.id = f.delivery_id
      WHERE f.upload_id IN (SELECT value FROM json_each(${JSON.stringify(uploadIds)}))
        AND d.agency_id = ${agencyId}
    ) WHERE n = 1`);
  for (const r of rows) {
    latest.set(r.upload_id, {
      deliveryId: r.delivery_id,
      deliveryStatus: r.delivery_status,
      fileStatus: r.file_status,
      error: r.error,
      updatedAt: r.updated_at,
    });
  }
  return latest;
}

/** One upload of the agency with its listing and latest delivery; another agency's is 404 `upload_not_found`. */
export async function findUploadView(db: Db, agencyId: string, uploadId: string): Promise<UploadView> {
  const row = await db
    .select({ upload: mediaUploads, listingNumber: listings.listingNumber })
    .from(mediaUploads)
    .leftJoin(listings, and(eq(listings.id, mediaUploads.listingId), eq(listings.agencyId, agencyId)))
    .where(and(eq(mediaUploads.id, uploadId), eq(mediaUploads.agencyId, agencyId)))
    .get();
  if (!row) throw new DomainError("upload_not_found");
  const delivery = (await latestDeliveries(db, agencyId, [uploadId])).get(uploadId) ?? null;
  return { upload: row.upload, listingNumber: row.listingNumber ?? null, delivery };
}

/** A cursor page of a listing's uploads, oldest first, each with its latest delivery. */
export async function pageListingUploads(
  db: Db,
  listing: Pick<Listing, "id" | "agencyId" | "listingNumber">,
  req: PageRequest,
): Promise<Page<UploadView>> {
  const where = and(eq(mediaUploads.listingId, listing.id), eq(mediaUploads.agencyId, listing.agencyId));
  const page = await keysetPage(db, mediaUploads, `media:${listing.id}`, where, req);
  const latest = await latestDeliveries(
    db,
    listing.agencyId,
    page.rows.map((u) => u.id),
  );
  return {
    rows: page.rows.map((upload) => ({
      upload,
      listingNumber: listing.listingNumber,
      delivery: latest.get(upload.id) ?? null,
    })),
    nextCursor: page.nextCursor,
  };
}
