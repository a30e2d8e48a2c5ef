import type { Db } from "../../db/client";
import type { Verdict } from "../jobs";
import { r2Call } from "../r2-call";
import { dropParts } from "./multipart";
import { findUpload, settleUpload } from "./records";

/**
 * Settles an upload that nobody reported: its bytes are in R2 when a pre-signed PUT
 * went through without an event notification; otherwise its URL lapsed unused (and the
 * parts of a multipart upload never completed are dropped).
 */
export async function settleJob(db: Db, env: Env, uploadId: string, young: boolean): Promise<Verdict> {
  const upload = await findUpload(db, uploadId);
  if (!upload) return young ? { retryAfter: 10 } : "done";
  if (upload.status !== "pending") return "done";
  const head = await r2Call("HEAD", env.UPLOADS.head(upload.objectKey));
  const arrived = head?.size === upload.sizeBytes;
  if (head && !arrived) await r2Call("delete", env.UPLOADS.delete(upload.objectKey));
  if (!arrived) await dropParts(env, upload);
  await settleUpload(
    db,
    env,
    upload,
    head && arrived ? { status: "completed", etag: head.etag } : { status: "expired" },
  );
  return "done";
}
