import type { Db } from "../../db/client";
import type { MediaUpload } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { type PartPlan, partPlan } from "../policy";
import { r2Credentials } from "../presign";
import { r2Call } from "../r2-call";
import { localStoredParts } from "./parts";
import { findUpload, settleUpload } from "./records";
import { listR2Parts, type StoredPart } from "./s3-list-parts";

/** An upload that goes up in parts, with how its file is cut. */
export interface Multipart {
  upload: MediaUpload & { multipartId: string };
  plan: PartPlan;
}

/** The upload's parts; 409 `upload_not_multipart` for a file sent in one PUT. */
export function multipartOf(upload: MediaUpload): Multipart {
  if (!upload.multipartId || !upload.partSizeBytes) {
    throw new DomainError("upload_not_multipart", { details: { upload_id: upload.id } });
  }
  return { upload: { ...upload, multipartId: upload.multipartId }, plan: partPlan(upload.sizeBytes) };
}

/** Parts are accepted only while the upload is pending: 409 once it has its file, or was aborted or expired. */
export function stillOpen(upload: MediaUpload) {
  if (upload.status === "completed") {
    throw new DomainError("upload_already_completed", { details: { upload_id: upload.id } });
  }
  if (upload.status !== "pending") {
    throw new DomainError("upload_closed", { details: { upload_id: upload.id, status: upload.status } });
  }
}

/** Part numbers from 1 to the part count; 422 `upload_part_out_of_range` names the others. */
export function checkPartNumbers(plan: PartPlan, numbers: number[]) {
  const outside = numbers.filter((n) => !Number.isInteger(n) || n < 1 || n > plan.partCount);
  if (outside.length) {
    throw new DomainError("upload_part_out_of_range", {
      details: { part_numbers: outside, part_count: plan.partCount },
    });
  }
}

/** The parts stored so far: from R2 where the client sends parts to R2 directly, else as the service received them. */
export async function storedParts(db: Db, env: Env, { upload }: Multipart): Promise<StoredPart[]> {
  const creds = r2Credentials(env);
  if (creds) return listR2Parts(creds, { uploadId: upload.id, ...upload });
  return localStoredParts(db, upload.id);
}

/**
 * Completes a multipart upload with the client's part list: it must name every part,
 * 1 to the part count, with the ETag each was stored with. The object R2 assembles must
 * have the declared size; the upload then settles as a single PUT does (its delivery and
 * events follow, once). Completing a completed upload changes nothing. When R2 already
 * assembled the object (a retry after an answer was lost), the stored object is used.
 */
export async function completeMultipart(
  db: Db,
  env: Env,
  m: Multipart,
  parts: { part_number: number; etag: string }[],
): Promise<void> {
  const { upload, plan } = m;
  if (upload.status === "completed") return;
  stillOpen(upload);
  checkPartNumbers(
    plan,
    parts.map((p) => p.part_number),
  );
  const etags = new Map(parts.map((p) => [p.part_number, p.etag.replace(/^"|"$/g, "")]));
  const missing: number[] = [];
  for (let n = 1; n <= plan.partCount && missing.length < 100; n++) if (!etags.has(n)) missing.push(n);
  if (missing.length || parts.length !== plan.partCount) throw incomplete({ missing_part_numbers: missing });
  if (!r2Credentials(env)) {
    const stored = new Map((await localStoredParts(db, upload.id)).map((p) => [p.partNumber, p.etag]));
    const unmatched = [...etags].filter(([n, etag]) => stored.get(n) !== etag).map(([n]) => n);
    if (unmatched.length) throw incomplete({ unmatched_part_numbers: unmatched.slice(0, 100) });
  }
  const mpu = env.UPLOADS.resumeMultipartUpload(upload.objectKey, upload.multipartId);
  const list = [...etags].sort(([a], [b]) => a - b).map(([partNumber, etag]) => ({ partNumber, etag }));
  let object: R2Object | null = await r2Call("completeMultipartUpload", mpu.complete(list)).catch(() => null);
  object ??= await r2Call("HEAD", env.UPLOADS.head(upload.objectKey));
  if (!object) throw incomplete({ refused_by_storage: true });
  if (object.size !== upload.sizeBytes) {
    await r2Call("delete", env.UPLOADS.delete(upload.objectKey));
    await settleUpload(db, env, upload, { status: "expired" });
    throw new DomainError("upload_size_mismatch", {
      message: `The parts add up to ${object.size} bytes; this upload declared ${upload.sizeBytes}.`,
      details: { expected_bytes: upload.sizeBytes, stored_bytes: object.size },
    });
  }
  // A refused delivery send (503) leaves the assembled object in place: completing again settles it.
  const settled = await settleUpload(db, env, upload, { status: "completed", etag: object.etag });
  if (!settled.settled) {
    const now = await findUpload(db, upload.id);
    if (now?.status === "completed" && now.objectEtag === object.etag) return;
    await r2Call("delete", env.UPLOADS.delete(upload.objectKey));
    throw new DomainError("upload_closed", { details: { upload_id: upload.id, status: now?.status ?? null } });
  }
}

const incomplete = (details: Record<string, unknown>) => new DomainError("upload_parts_incomplete", { details });

/**
 * Aborts a multipart upload: R2 drops its parts and the upload ends `aborted` (its
 * listing's delivery no longer waits for it). Aborting an aborted or expired upload
 * changes nothing; a completed one is 409 `upload_already_completed`.
 */
export async function abortMultipart(db: Db, env: Env, { upload }: Multipart): Promise<void> {
  if (upload.status === "aborted" || upload.status === "expired") return;
  if (upload.status === "completed") stillOpen(upload);
  const settled = await settleUpload(db, env, upload, { status: "aborted" });
  if (!settled.settled) {
    const now = await findUpload(db, upload.id);
    if (now?.status === "completed") stillOpen(now);
  }
  await dropParts(env, upload);
}

/**
 * Tells R2 to drop an unfinished multipart upload's parts. R2 refuses when the upload
 * already ended (completed or aborted); either way no parts are left to drop.
 */
export async function dropParts(env: Env, upload: Pick<MediaUpload, "objectKey" | "multipartId">) {
  if (!upload.multipartId) return;
  const mpu = env.UPLOADS.resumeMultipartUpload(upload.objectKey, upload.multipartId);
  await r2Call("abortMultipartUpload", mpu.abort()).catch(() => undefined);
}
