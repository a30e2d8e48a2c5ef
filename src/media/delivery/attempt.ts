import { and, asc, desc, eq, inArray } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { listings, mediaDeliveries, mediaDeliveryFiles, mediaUploads } from "../../db/schema";
import { keyringOf } from "../../lib/crypto/keyring";
import { nowIso } from "../../lib/ids";
import type { Verdict } from "../jobs";
import { fileNameOf } from "../policy";
import { r2Call } from "../r2-call";
import { deliverFile } from "../sandbox";
import { type Budget, COPY_SLOTS, take } from "./batch-budget";
import { openDestination } from "./destinations";
import { finish } from "./finish";
import { MAX_DELIVERY_ATTEMPTS, retryDelaySeconds } from "./retry";
import type { PutOutcome } from "./s3-put";

/** Files of one delivery copied at the same time, at most: each also needs a copy slot of the batch. */
export const PARALLEL_PUTS = COPY_SLOTS;
/**
 * Files one run of a delivery job copies at most; the files still pending after it are
 * carried by a fresh job sent right away (a continuation, not an attempt).
 */
export const FILES_PER_RUN = 40;

const joinKey = (...parts: string[]) =>
  parts
    .map((p) => p.replace(/^\/+|\/+$/g, ""))
    .filter(Boolean)
    .join("/");

/**
 * One run of a delivery: files not yet delivered are copied from R2 to the agent's
 * bucket, PARALLEL_PUTS at a time (each holding a copy slot of the batch), at most
 * FILES_PER_RUN of them (pending files first, then failed ones, longest-waiting first).
 * While files are still pending after the run it continues in a fresh job; otherwise the
 * run was an attempt. Retryable failures are retried with backoff; after the last attempt
 * (or when nothing left is retryable) the delivery is final: `completed` if any file
 * arrived, else `failed`, with its event in the same batch.
 */
export async function deliver(db: Db, env: Env, deliveryId: string, young: boolean, budget: Budget): Promise<Verdict> {
  const delivery = await db.select().from(mediaDeliveries).where(eq(mediaDeliveries.id, deliveryId)).get();
  if (!delivery) return young ? { retryAfter: 10 } : "done";
  if (delivery.status === "completed" || delivery.status === "failed") return "done";
  const listing = await db.select().from(listings).where(eq(listings.id, delivery.listingId)).get();
  if (!listing) return "done";
  const attempt = delivery.attempts + 1;
  const stamp = nowIso();

  const open = await db
    .select({ file: mediaDeliveryFiles, upload: mediaUploads })
    .from(mediaDeliveryFiles)
    .innerJoin(mediaUploads, eq(mediaUploads.id, mediaDeliveryFiles.uploadId))
    .where(
      and(
        eq(mediaDeliveryFiles.deliveryId, deliveryId),
        inArray(mediaDeliveryFiles.status, ["pending", "failed"]),
        eq(mediaDeliveryFiles.permanent, false),
      ),
    )
    .orderBy(desc(mediaDeliveryFiles.status), asc(mediaDeliveryFiles.updatedAt), asc(mediaDeliveryFiles.uploadId))
    .limit(FILES_PER_RUN + 1)
    .all();

  const destination = await openDestination(db, keyringOf(env), delivery);
  const outcomes = new Map<string, PutOutcome>();
  if (!destination) {
    for (const { upload } of open)
      outcomes.set(upload.id, {
        ok: false,
        permanent: true,
        error: "no delivery destination is configured for the agent",
      });
  } else {
    const queue = open.slice(0, FILES_PER_RUN);
    const copy = async ({ upload }: (typeof queue)[number]) => {
      // Only the object the upload completed with is delivered, never one written over it since.
      const object = await r2Call(
        "get",
        env.UPLOADS.get(
          upload.objectKey,
          upload.objectEtag ? { onlyIf: { etagMatches: upload.objectEtag } } : undefined,
        ),
      );
      if (!object) {
        outcomes.set(upload.id, { ok: false, permanent: true, error: "the uploaded file is missing from storage" });
        return;
      }
      if (!("body" in object)) {
        outcomes.set(upload.id, {
          ok: false,
          permanent: true,
          error: "the uploaded file was replaced after its upload completed",
        });
        return;
      }
      const key = joinKey(destination.pathPrefix, listing.listingNumber, upload.assetType, fileNameOf(upload));
      outcomes.set(
        upload.id,
        await deliverFile(
          env,
          delivery.agencyId,
          destination,
          key,
          object.body,
          { contentType: upload.contentType, size: object.size },
          { allowLocalHttp: env.ALLOW_HTTP_RECEIVERS === "true" },
        ),
      );
    };
    // Each copy waits for one of the batch's copy slots, shared fairly with other agencies' deliveries.
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        await budget.copies.acquire(delivery.agencyId);
        try {
          if (!take(budget, 2)) return;
          await copy(next);
        } finally {
          budget.copies.release(delivery.agencyId);
        }
      }
    };
    await Promise.all(Array.from({ length: PARALLEL_PUTS }, worker));
  }

  const fileUpdates: BatchItem<"sqlite">[] = [...outcomes].map(([uploadId, o]) =>
    db
      .update(mediaDeliveryFiles)
      .set(
        o.ok
          ? { status: "delivered", error: null, updatedAt: stamp }
          : { status: "failed", permanent: o.permanent, error: o.error, updatedAt: stamp },
      )
      .where(and(eq(mediaDeliveryFiles.deliveryId, deliveryId), eq(mediaDeliveryFiles.uploadId, uploadId))),
  );
  // Pending files this run did not reach (past FILES_PER_RUN, or past the batch's budget) follow in a fresh job.
  if (destination && open.some(({ file, upload }) => file.status === "pending" && !outcomes.has(upload.id))) {
    await db.batch([
      db
        .update(mediaDeliveries)
        .set({ status: "delivering", updatedAt: stamp })
        .where(and(eq(mediaDeliveries.id, deliveryId), inArray(mediaDeliveries.status, ["queued", "delivering"]))),
      ...fileUpdates,
    ]);
    return "continue";
  }
  const retryable = [...outcomes.values()].some((o) => !o.ok && !o.permanent);
  if (retryable && attempt < MAX_DELIVERY_ATTEMPTS) {
    await db.batch([
      db
        .update(mediaDeliveries)
        .set({ status: "delivering", attempts: attempt, updatedAt: stamp })
        .where(eq(mediaDeliveries.id, deliveryId)),
      ...fileUpdates,
    ]);
    return { retryAfter: retryDelaySeconds(attempt) };
  }
  await finish(db, delivery, listing.listingNumber, attempt, outcomes, fileUpdates, stamp);
  return "done";
}
