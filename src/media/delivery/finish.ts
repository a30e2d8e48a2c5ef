import { and, eq, inArray } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { listings, type MediaDelivery, mediaDeliveries, mediaDeliveryFiles, mediaUploads } from "../../db/schema";
import { outboxInsertIfChanged } from "../../domain/events/outbox";
import { nowIso } from "../../lib/ids";
import { fileNameOf } from "../policy";
import type { PutOutcome } from "./s3-put";

/**
 * Writes the final state and its event in one batch. The state change is guarded, so a
 * duplicate job that finishes second changes nothing and emits nothing.
 */
export async function finish(
  db: Db,
  delivery: MediaDelivery,
  listingNumber: string,
  attempt: number,
  outcomes: Map<string, PutOutcome>,
  fileUpdates: BatchItem<"sqlite">[],
  stamp: string,
  pendingError = "not delivered",
) {
  const files = await db
    .select({ file: mediaDeliveryFiles, upload: mediaUploads })
    .from(mediaDeliveryFiles)
    .innerJoin(mediaUploads, eq(mediaUploads.id, mediaDeliveryFiles.uploadId))
    .where(eq(mediaDeliveryFiles.deliveryId, delivery.id))
    .all();
  const failed: { upload_id: string; filename: string | null; error: string }[] = [];
  let delivered = 0;
  for (const { file, upload } of files) {
    const o = outcomes.get(upload.id);
    if (o ? o.ok : file.status === "delivered") delivered++;
    else
      failed.push({
        upload_id: upload.id,
        filename: fileNameOf(upload),
        error: (o && !o.ok ? o.error : file.error) ?? pendingError,
      });
  }
  const completed = delivered > 0;
  const error: string = failed[0]?.error ?? "nothing to deliver";
  const events = completed
    ? outboxInsertIfChanged(db, delivery.agencyId, "media.delivery.completed", {
        delivery_id: delivery.id,
        listing_number: listingNumber,
        summary: { files_total: files.length, files_delivered: delivered, files_failed: failed.length, failed },
      })
    : outboxInsertIfChanged(db, delivery.agencyId, "media.delivery.failed", {
        delivery_id: delivery.id,
        listing_number: listingNumber,
        attempts: attempt,
        error,
      });
  // Files this attempt never reached are failures too; this attempt's outcomes follow and win.
  await db.batch([
    db
      .update(mediaDeliveryFiles)
      .set({ status: "failed", error: pendingError, updatedAt: stamp })
      .where(and(eq(mediaDeliveryFiles.deliveryId, delivery.id), eq(mediaDeliveryFiles.status, "pending"))),
    ...fileUpdates,
    db
      .update(mediaDeliveries)
      .set({
        status: completed ? "completed" : "failed",
        attempts: attempt,
        filesTotal: files.length,
        filesDelivered: delivered,
        filesFailed: failed.length,
        error: completed ? null : error,
        finishedAt: stamp,
        updatedAt: stamp,
      })
      .where(and(eq(mediaDeliveries.id, delivery.id), inArray(mediaDeliveries.status, ["queued", "delivering"]))),
    events,
  ]);
}

/**
 * Ends a delivery that will get no further attempt (its job was dead-lettered, or it made
 * no progress for too long) through the same final write as its last attempt: pending
 * files fail with `reason`, and the delivery is `completed` if any file arrived, else
 * `failed` with `media.delivery.failed`. A delivery already final is left as it is, so
 * the event is emitted once however often this runs.
 */
export async function abandonDelivery(db: Db, deliveryId: string, reason: string): Promise<boolean> {
  const delivery = await db.select().from(mediaDeliveries).where(eq(mediaDeliveries.id, deliveryId)).get();
  if (!delivery || delivery.status === "completed" || delivery.status === "failed") return false;
  const listing = await db.select().from(listings).where(eq(listings.id, delivery.listingId)).get();
  if (!listing) return false;
  await finish(db, delivery, listing.listingNumber, Math.max(delivery.attempts, 1), new Map(), [], nowIso(), reason);
  return true;
}
