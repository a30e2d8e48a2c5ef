import { and, eq, inArray } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { type Db, database } from "../db/client";
import { listings, type MediaDelivery, mediaDeliveries, mediaDeliveryFiles, mediaUploads } from "../db/schema";
import { outboxInsertIfChanged } from "../domain/outbox";
import { nowIso } from "../lib/ids";
import type { PutOutcome } from "./delivery";
import { openDestination } from "./destinations";
import type { MediaJob, R2EventNotification } from "./jobs";
import { fileNameOf } from "./policy";
import { deliverFile } from "./sandbox";
import { findUpload, findUploadByKey, settleUpload } from "./uploads";

/** Attempts of a delivery before its outcome is final: 30 s, 1, 2 and 4 min apart. */
export const MAX_DELIVERY_ATTEMPTS = 5;
export const retryDelaySeconds = (attempt: number) => Math.min(30 * 2 ** (attempt - 1), 3600);
/** A job may be consumed before the write that follows its send commits: wait for it this long. */
const YOUNG_JOB_MS = 60_000;
const PARALLEL_PUTS = 4;

type Verdict = { retryAfter: number } | "done";

export async function consumeMedia(batch: MessageBatch, env: Env, _ctx: ExecutionContext): Promise<void> {
  const db = database(env.DB);
  for (const msg of batch.messages) {
    try {
      const verdict = await handle(db, env, msg.body, msg.timestamp);
      if (verdict === "done") msg.ack();
      else msg.retry({ delaySeconds: verdict.retryAfter });
    } catch (err) {
      console.error(
        JSON.stringify({
          level: "error",
          job: "media",
          message_id: msg.id,
          error: String(err),
          stack: err instanceof Error ? err.stack : undefined,
        }),
      );
      msg.retry({ delaySeconds: 30 });
    }
  }
}

function isR2Event(body: unknown): body is R2EventNotification {
  return (
    !!body &&
    typeof body === "object" &&
    typeof (body as R2EventNotification).object?.key === "string" &&
    typeof (body as R2EventNotification).action === "string"
  );
}

async function handle(db: Db, env: Env, body: unknown, sentAt: Date): Promise<Verdict> {
  if (isR2Event(body)) return objectCreated(db, env, body);
  const job = body as MediaJob;
  const young = Date.now() - sentAt.getTime() < YOUNG_JOB_MS;
  switch (job?.kind) {
    case "upload.settle":
      return settleJob(db, env, job.upload_id, young);
    case "delivery":
      return deliver(db, env, job.delivery_id, young);
    default:
      console.error(JSON.stringify({ level: "error", job: "media", error: "unknown message", body }));
      return "done";
  }
}

/**
 * R2 reports a finished PUT to a pre-signed URL: the upload completes with that object,
 * the first one of the declared size to arrive. A later object at the same key (which
 * R2's signed `If-None-Match: *` already refuses) completes nothing and is never delivered.
 */
async function objectCreated(db: Db, env: Env, event: R2EventNotification): Promise<Verdict> {
  if (!/^(PutObject|CompleteMultipartUpload|CopyObject)$/.test(event.action)) return "done";
  const upload = await findUploadByKey(db, event.object.key);
  if (upload?.status !== "pending") return "done";
  const head = await env.UPLOADS.head(upload.objectKey);
  if (head?.size !== upload.sizeBytes) return "done";
  if (event.object.eTag && event.object.eTag !== head.etag) return "done";
  await settleUpload(db, env, upload, { status: "completed", etag: head.etag });
  return "done";
}

/**
 * Settles an upload that nobody reported: its bytes are in R2 when a pre-signed PUT
 * went through without an event notification; otherwise its URL lapsed unused.
 */
async function settleJob(db: Db, env: Env, uploadId: string, young: boolean): Promise<Verdict> {
  const upload = await findUpload(db, uploadId);
  if (!upload) return young ? { retryAfter: 10 } : "done";
  if (upload.status !== "pending") return "done";
  const head = await env.UPLOADS.head(upload.objectKey);
  const arrived = head?.size === upload.sizeBytes;
  if (head && !arrived) await env.UPLOADS.delete(upload.objectKey);
  await settleUpload(
    db,
    env,
    upload,
    head && arrived ? { status: "completed", etag: head.etag } : { status: "expired" },
  );
  return "done";
}

const joinKey = (...parts: string[]) =>
  parts
    .map((p) => p.replace(/^\/+|\/+$/g, ""))
    .filter(Boolean)
    .join("/");

/**
 * One attempt of a delivery: every file not yet delivered is copied from R2 to the
 * agent's bucket. Retryable failures are retried with backoff; after the last attempt
 * (or when nothing left is retryable) the delivery is final: `completed` if any file
 * arrived, else `failed`, with its event in the same batch.
 */
async function deliver(db: Db, env: Env, deliveryId: string, young: boolean): Promise<Verdict> {
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
    .all();

  const destination = await openDestination(db, env.SECRET_KEY, delivery);
  const outcomes = new Map<string, PutOutcome>();
  if (!destination) {
    for (const { upload } of open)
      outcomes.set(upload.id, {
        ok: false,
        permanent: true,
        error: "no delivery destination is configured for the agent",
      });
  } else {
    const queue = [...open];
    const worker = async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const { upload } = next;
        // Only the object the upload completed with is delivered, never one written over it since.
        const object = await env.UPLOADS.get(
          upload.objectKey,
          upload.objectEtag ? { onlyIf: { etagMatches: upload.objectEtag } } : undefined,
        );
        if (!object) {
          outcomes.set(upload.id, { ok: false, permanent: true, error: "the uploaded file is missing from storage" });
          continue;
        }
        if (!("body" in object)) {
          outcomes.set(upload.id, {
            ok: false,
            permanent: true,
            error: "the uploaded file was replaced after its upload completed",
          });
          continue;
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

/**
 * Writes the final state and its event in one batch. The state change is guarded, so a
 * duplicate job that finishes second changes nothing and emits nothing.
 */
async function finish(
  db: Db,
  delivery: MediaDelivery,
  listingNumber: string,
  attempt: number,
  outcomes: Map<string, PutOutcome>,
  fileUpdates: BatchItem<"sqlite">[],
  stamp: string,
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
        error: (o && !o.ok ? o.error : file.error) ?? "not delivered",
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
      .set({ status: "failed", error: "not delivered", updatedAt: stamp })
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
