import { and, eq, gt, ne } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { type Listing, listings, type MediaUpload, mediaUploads } from "../../db/schema";
import { quotaRefusal } from "../../domain/quotas";
import { newId, nowIso } from "../../lib/ids";
import { prepareDelivery } from "../delivery/records";
import { sendJob } from "../jobs";
import { type AssetType, fileNameOf, MULTIPART_THRESHOLD_BYTES, partPlan } from "../policy";
import { UPLOAD_URL_TTL_SECONDS } from "../presign";
import { r2Call } from "../r2-call";

/** Starts R2's multipart upload for a new upload's object; answers R2's upload id. */
async function openMultipart(env: Env, objectKey: string, contentType: string, uploadId: string) {
  const mpu = await r2Call(
    "createMultipartUpload",
    env.UPLOADS.createMultipartUpload(objectKey, {
      httpMetadata: { contentType },
      customMetadata: { upload_id: uploadId },
    }),
  );
  return mpu.uploadId;
}

/** How long after its URL lapses an upload nobody reported is settled. */
const SETTLE_GRACE_SECONDS = 120;

interface NewUpload {
  agencyId: string;
  listing: Listing | null;
  assetType: AssetType;
  contentType: string;
  sizeBytes: number;
  filename: string | null;
  userId: string;
}

/** How long a multipart upload accepts parts: its settle job's delay stays inside the queue's 12-hour maximum. */
const MULTIPART_TTL_SECONDS = 11 * 3600;

/**
 * Records an upload and schedules its settle job. The job is sent first: when the queue
 * refuses it, nothing was written (503 `queue_unavailable`); when the write fails after
 * the send, the job finds no upload and is dropped. A file above the multipart threshold
 * gets R2's multipart upload before the write (one R2 leaves unused is dropped by R2's
 * lifecycle of unfinished uploads) and stays open for `MULTIPART_TTL_SECONDS`.
 */
export async function createUpload(
  db: Db,
  env: Env,
  input: NewUpload,
  alsoWrite: (id: string) => BatchItem<"sqlite">[] = (_) => [],
  now = new Date(),
): Promise<MediaUpload> {
  const id = newId("upl");
  const fileName = fileNameOf({ id, filename: input.filename, contentType: input.contentType });
  const objectKey = `${input.agencyId}/${input.listing?.listingNumber ?? "unassigned"}/${id}/${fileName}`;
  const multipart = input.sizeBytes > MULTIPART_THRESHOLD_BYTES;
  const ttl = multipart ? MULTIPART_TTL_SECONDS : UPLOAD_URL_TTL_SECONDS;
  await sendJob(env.MEDIA_QUEUE, { kind: "upload.settle", upload_id: id }, ttl + SETTLE_GRACE_SECONDS);
  const row = {
    id,
    agencyId: input.agencyId,
    listingId: input.listing?.id ?? null,
    assetType: input.assetType,
    contentType: input.contentType,
    sizeBytes: input.sizeBytes,
    filename: input.filename,
    objectKey,
    multipartId: multipart ? await openMultipart(env, objectKey, input.contentType, id) : null,
    partSizeBytes: multipart ? partPlan(input.sizeBytes).partSize : null,
    createdByUserId: input.userId,
    expiresAt: nowIso(now.getTime() + ttl * 1000),
  };
  const [[created]] = await db
    .batch([db.insert(mediaUploads).values(row).returning(), ...alsoWrite(id)])
    .catch((err: unknown) => quotaRefusal(db, input.agencyId, err));
  return created!;
}

export async function findUpload(db: Db, id: string) {
  return db.select().from(mediaUploads).where(eq(mediaUploads.id, id)).get();
}

/** An upload by id, held to the agency; undefined when it is not the agency's. */
export async function uploadOfAgency(db: Db, agencyId: string, id: string) {
  return db
    .select()
    .from(mediaUploads)
    .where(and(eq(mediaUploads.id, id), eq(mediaUploads.agencyId, agencyId)))
    .get();
}

export async function listingOf(db: Db, upload: Pick<MediaUpload, "listingId">) {
  return upload.listingId ? db.select().from(listings).where(eq(listings.id, upload.listingId)).get() : undefined;
}

/** True while another upload of the listing can still arrive: its delivery waits for it. */
async function othersPending(db: Db, listingId: string, exceptId: string, now: Date) {
  const row = await db
    .select({ id: mediaUploads.id })
    .from(mediaUploads)
    .where(
      and(
        eq(mediaUploads.listingId, listingId),
        eq(mediaUploads.status, "pending"),
        ne(mediaUploads.id, exceptId),
        gt(mediaUploads.expiresAt, nowIso(now.getTime())),
      ),
    )
    .get();
  return !!row;
}

/**
 * Settles an upload as completed (with the ETag of the one object it accepts) or
 * expired. Only a pending upload settles, once. When it was the last upload of its
 * listing still under way, the listing's new files are delivered: the delivery job is
 * sent before anything is written, so a refused send (503) leaves the upload as it was.
 */
export async function settleUpload(
  db: Db,
  env: Env,
  upload: MediaUpload,
  outcome: { status: "completed"; etag: string } | { status: "expired" | "aborted" },
  now = new Date(),
): Promise<{ settled: boolean; deliveryId: string | null }> {
  const listing = await listingOf(db, upload);
  const delivery =
    listing && !(await othersPending(db, listing.id, upload.id, now))
      ? await prepareDelivery(env, db, listing, "upload", "undelivered")
      : undefined;
  const stamp = nowIso(now.getTime());
  const [result] = await db.batch([
    db
      .update(mediaUploads)
      .set(
        outcome.status === "completed"
          ? { status: "completed", completedAt: stamp, objectEtag: outcome.etag, updatedAt: stamp }
          : { status: outcome.status, updatedAt: stamp },
      )
      .where(and(eq(mediaUploads.id, upload.id), eq(mediaUploads.status, "pending"))),
    ...(delivery?.statements ?? []),
  ]);
  const settled = (result as { meta?: { changes?: number } }).meta?.changes === 1;
  return { settled, deliveryId: delivery?.deliveryId ?? null };
}

/** The listing's uploads, oldest first. */
export const uploadsOf = (db: Db, listing: Pick<Listing, "id" | "agencyId">) =>
  db
    .select()
    .from(mediaUploads)
    .where(and(eq(mediaUploads.listingId, listing.id), eq(mediaUploads.agencyId, listing.agencyId)))
    .orderBy(mediaUploads.createdAt)
    .all();

export const findUploadByKey = (db: Db, objectKey: string) =>
  db.select().from(mediaUploads).where(eq(mediaUploads.objectKey, objectKey)).get();
