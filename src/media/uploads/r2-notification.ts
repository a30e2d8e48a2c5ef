import type { Db } from "../../db/client";
import type { R2EventNotification, Verdict } from "../jobs";
import { r2Call } from "../r2-call";
import { findUploadByKey, settleUpload } from "./records";

export function isR2Event(body: unknown): body is R2EventNotification {
  return (
    !!body &&
    typeof body === "object" &&
    typeof (body as R2EventNotification).object?.key === "string" &&
    typeof (body as R2EventNotification).action === "string"
  );
}

/**
 * R2 reports a finished PUT to a pre-signed URL: the upload completes with that object,
 * the first one of the declared size to arrive. A later object at the same key (which
 * R2's signed `If-None-Match: *` already refuses) completes nothing and is never delivered.
 */
export async function objectCreated(db: Db, env: Env, event: R2EventNotification): Promise<Verdict> {
  if (!/^(PutObject|CompleteMultipartUpload|CopyObject)$/.test(event.action)) return "done";
  const upload = await findUploadByKey(db, event.object.key);
  if (upload?.status !== "pending") return "done";
  const head = await r2Call("HEAD", env.UPLOADS.head(upload.objectKey));
  if (head?.size !== upload.sizeBytes) return "done";
  if (event.object.eTag && event.object.eTag !== head.etag) return "done";
  await settleUpload(db, env, upload, { status: "completed", etag: head.etag });
  return "done";
}
