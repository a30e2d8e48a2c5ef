import { and, asc, desc, eq, inArray, lt } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import { type Db, database } from "../db/client";
import { listings, type MediaDelivery, mediaDeliveries, mediaDeliveryFiles, mediaUploads } from "../db/schema";
import { outboxInsertIfChanged } from "../domain/outbox";
import { doublingBackoff } from "../lib/backoff";
import { nowIso } from "../lib/ids";
import type { PutOutcome } from "./s3-put";
import { openDestination } from "./destinations";
import { type MediaJob, type R2EventNotification, sendJob } from "./jobs";
import { fileNameOf } from "./policy";
import { deliverFile } from "./sandbox";
import { findUpload, findUploadByKey, settleUpload } from "./uploads";

/** Attempts of a delivery before its outcome is final: 30 s, 1, 2 and 4 min apart. */
export const MAX_DELIVERY_ATTEMPTS = 5;
export const retryDelaySeconds = (attempt: number) => doublingBackoff(attempt, 30, 3600);
/** A job may be consumed before the write that follows its send commits: wait for it this long. */
const YOUNG_JOB_MS = 60_000;
/** Files of one delivery copied at the same time. */
export const PARALLEL_PUTS = 4;
/**
 * Files one run of a delivery job copies at most; the files still pending after it are
 * carried by a fresh job sent right away (a continuation, not an attempt).
 */
export const FILES_PER_RUN = 40;
/**
 * Outbound calls (an R2 read and a PUT per file, a HEAD or two per settle) a batch may
 * start: under the 1,000 subrequests of one invocation. Ten messages of 40 files fit.
 */
export const BATCH_SUBREQUESTS = 800;
/** A batch starts no new copy after this long: a PUT started last may take PUT_TIMEOUT_MS, inside 15 minutes. */
export const BATCH_DEADLINE_MS = 4 * 60_000;
/** A read, HEAD or delete on the uploads bucket not answered within this long fails the run (retried later). */
export const R2_TIMEOUT_MS = 30_000;

type Verdict = { retryAfter: number } | "continue" | "done";

/** What a batch may still spend: outbound calls and time to start new work. */
interface Budget {
  subrequests: number;
  deadline: number;
}
const take = (budget: Budget, calls: number) => {
  if (budget.subrequests < calls || Date.now() >= budget.deadline) return false;
  budget.subrequests -= calls;
  return true;
};

/** An R2 binding call bounded in time: a bucket that does not answer fails this run instead of holding it. */
export async function r2Call<T>(what: string, call: Promise<T>, timeoutMs = R2_TIMEOUT_MS): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`R2 ${what} did not answer within ${timeoutMs / 1000} s`)), timeoutMs);
  });
  try {
    return await Promise.race([call, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * The media queue's consumer: messages are settled one by one (ack, or retry with its
 * own delay), never the batch as a whole. A message the batch has no budget left for,
 * and a delivery with files still pending after its run, go back as a fresh message, so
 * they spend none of the queue's retries.
 */
export async function consumeMedia(batch: MessageBatch, env: Env, _ctx: ExecutionContext): Promise<void> {
  const db = database(env.DB);
  const budget: Budget = { subrequests: BATCH_SUBREQUESTS, deadline: Date.now() + BATCH_DEADLINE_MS };
  for (const msg of batch.messages) {
    try {
      const verdict = take(budget, 2) ? await handle(db, env, msg.body, msg.timestamp, budget) : "continue";
      if (verdict === "continue") await env.MEDIA_QUEUE.send(msg.body);
      if (verdict === "done" || verdict === "continue") msg.ack();
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

async function handle(db: Db, env: Env, body: unknown, sentAt: Date, budget: Budget): Promise<Verdict> {
  if (isR2Event(body)) return objectCreated(db, env, body);
  const job = body as MediaJob;
  const young = Date.now() - sentAt.getTime() < YOUNG_JOB_MS;
  switch (job?.kind) {
    case "upload.settle":
      return settleJob(db, env, job.upload_id, young);
    case "delivery":
      return deliver(db, env, job.delivery_id, young, budget);
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
  const head = await r2Call("HEAD", env.UPLOADS.head(upload.objectKey));
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
  const head = await r2Call("HEAD", env.UPLOADS.head(upload.objectKey));
  const arrived = head?.size === upload.sizeBytes;
  if (head && !arrived) await r2Call("delete", env.UPLOADS.delete(upload.objectKey));
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
 * One run of a delivery: files not yet delivered are copied from R2 to the agent's
 * bucket, PARALLEL_PUTS at a time, at most FILES_PER_RUN of them (pending files first,
 * then failed ones, longest-waiting first). While files are still pending after the run
 * it continues in a fresh job; otherwise the run was an attempt. Retryable failures are
 * retried with backoff; after the last attempt (or when nothing left is retryable) the
 * delivery is final: `completed` if any file arrived, else `failed`, with its event in
 * the same batch.
 */
async function deliver(db: Db, env: Env, deliveryId: string, young: boolean, budget: Budget): Promise<Verdict> {
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
    const queue = open.slice(0, FILES_PER_RUN);
    const worker = async () => {
      for (let next = queue.shift(); next && take(budget, 2); next = queue.shift()) {
        const { upload } = next;
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

/**
 * The media dead-letter queue: messages the consumer failed on every retry. A delivery
 * is ended as above; an upload's settle job or R2 notification gets one more try (both
 * change only a pending upload). Each message is settled on its own.
 */
export async function consumeDeadMedia(batch: MessageBatch, env: Env): Promise<void> {
  const db = database(env.DB);
  for (const msg of batch.messages) {
    try {
      const body = msg.body as MediaJob | R2EventNotification;
      if (isR2Event(body)) await objectCreated(db, env, body);
      else if (body?.kind === "delivery")
        await abandonDelivery(db, body.delivery_id, "delivery abandoned: its job failed on every retry");
      else if (body?.kind === "upload.settle") await settleJob(db, env, body.upload_id, false);
      msg.ack();
    } catch (err) {
      console.error(JSON.stringify({ level: "error", job: "media_dlq", message_id: msg.id, error: String(err) }));
      msg.retry({ delaySeconds: 60 });
    }
  }
}

/** A delivery unfinished with no progress for this long is picked up by the sweep. */
export const STUCK_DELIVERY_MS = 30 * 60_000;
/** Deliveries the sweep handles per run, oldest first; the rest wait for the next run. */
export const STUCK_SWEEP_PAGE = 25;

/**
 * The backstop for deliveries whose job was lost: one unfinished (`queued` or
 * `delivering`) with no progress for STUCK_DELIVERY_MS is sent again, which counts as an
 * attempt, or, when its attempts are spent, ended with its final event. Each row is
 * claimed by a guarded write first, so two sweeps never both send it.
 */
export async function sweepStuckDeliveries(env: Env, now = Date.now()): Promise<{ requeued: number; ended: number }> {
  const db = database(env.DB);
  const stuck = await db
    .select()
    .from(mediaDeliveries)
    .where(
      and(
        inArray(mediaDeliveries.status, ["queued", "delivering"]),
        lt(mediaDeliveries.updatedAt, nowIso(now - STUCK_DELIVERY_MS)),
      ),
    )
    .orderBy(asc(mediaDeliveries.updatedAt))
    .limit(STUCK_SWEEP_PAGE)
    .all();
  const counts = { requeued: 0, ended: 0 };
  for (const d of stuck) {
    try {
      if (d.attempts + 1 >= MAX_DELIVERY_ATTEMPTS) {
        const reason = `delivery abandoned: no progress for ${STUCK_DELIVERY_MS / 60_000} minutes`;
        if (await abandonDelivery(db, d.id, reason)) counts.ended++;
        continue;
      }
      const [claim] = await db
        .update(mediaDeliveries)
        .set({ attempts: d.attempts + 1, updatedAt: nowIso(now) })
        .where(and(eq(mediaDeliveries.id, d.id), eq(mediaDeliveries.updatedAt, d.updatedAt)))
        .returning({ id: mediaDeliveries.id });
      if (!claim) continue;
      await sendJob(env.MEDIA_QUEUE, { kind: "delivery", delivery_id: d.id });
      counts.requeued++;
    } catch (err) {
      console.error(JSON.stringify({ level: "error", job: "stuck_deliveries", delivery_id: d.id, error: String(err) }));
    }
  }
  return counts;
}
