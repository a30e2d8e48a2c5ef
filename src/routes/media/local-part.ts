import { type Context, Hono } from "hono";
import { signedUrlRoute } from "../../http/admission/auth-throttle";
import type { AppEnv } from "../../http/env";
import { routeToNamed } from "../../http/shard-route";
import { keyringOf } from "../../lib/crypto/keyring";
import { DomainError } from "../../lib/errors";
import { normalizeContentType, partSizeOf } from "../../media/policy";
import { checkLocalPartUrl, vouchesForPart } from "../../media/uploads/local-signing";
import { multipartOf } from "../../media/uploads/multipart";
import { claimPart, releasePart, storePart } from "../../media/uploads/parts";
import { findUpload } from "../../media/uploads/records";

/** Where a part of a multipart upload is sent when R2 is not signed for directly. */
export const LOCAL_PART_PATH = "/uploads/{upload_id}/parts/{part_number}";

/**
 * PUT /uploads/{upload_id}/parts/{part_number}?expires=…&sig=…: one part of a multipart
 * upload where R2 is not signed for directly, working as R2's pre-signed `UploadPart`
 * does, and single use besides. The part is claimed first (a stored part, or one another
 * request is receiving, is 409 `upload_part_already_stored`), then streamed into R2's
 * multipart upload through a fixed-length stream of exactly the part's size: a body of
 * another size stores nothing and gives the claim back, so the part can be sent again.
 */
async function localPart(c: Context<AppEnv>) {
  await routeToNamed(c, "upload", c.req.param("upload_id"));
  const db = c.var.db;
  const upload = await findUpload(db, c.req.param("upload_id") ?? "");
  const partNumber = Number(c.req.param("part_number"));
  if (!upload?.multipartId || !Number.isInteger(partNumber)) throw new DomainError("upload_url_invalid");
  const m = multipartOf(upload);
  if (partNumber < 1 || partNumber > m.plan.partCount) throw new DomainError("upload_url_invalid");
  const partBytes = partSizeOf(m.plan, partNumber);
  const check = await checkLocalPartUrl(
    keyringOf(c.env),
    { id: upload.id, contentType: upload.contentType, partNumber, partBytes },
    c.req.query("expires"),
    c.req.query("sig"),
  );
  if (check === "invalid") throw new DomainError("upload_url_invalid");
  if (check === "expired" || upload.status === "expired" || upload.status === "aborted")
    throw new DomainError("upload_url_expired");
  if (upload.status === "completed")
    throw new DomainError("upload_already_completed", { details: { upload_id: upload.id } });

  const received = c.req.header("content-type");
  if (!received || normalizeContentType(received) !== upload.contentType) {
    throw new DomainError("request_content_type_mismatch", {
      message: `This upload accepts Content-Type ${upload.contentType} only.`,
      details: { received: received ?? null, accepted: [upload.contentType] },
    });
  }
  const declared = c.req.header("content-length");
  const body = c.req.raw.body;
  if ((declared !== undefined && Number(declared) !== partBytes) || !body) throw sizeMismatch(partBytes, declared);

  if (!(await claimPart(db, upload.id, partNumber, partBytes))) {
    await body.cancel().catch(() => {});
    throw new DomainError("upload_part_already_stored", { details: { upload_id: upload.id, part_number: partNumber } });
  }
  const sized = new FixedLengthStream(partBytes);
  const piped = body.pipeTo(sized.writable).then(
    () => true,
    () => false,
  );
  const mpu = c.env.UPLOADS.resumeMultipartUpload(upload.objectKey, m.upload.multipartId);
  const stored = await mpu.uploadPart(partNumber, sized.readable).catch(() => null);
  if (!(await piped) || !stored) {
    await releasePart(db, upload.id, partNumber);
    throw sizeMismatch(partBytes, declared);
  }
  await storePart(db, upload.id, partNumber, stored.etag);
  return c.json({ upload_id: upload.id, part_number: partNumber, size_bytes: partBytes, etag: stored.etag }, 200, {
    ETag: `"${stored.etag}"`,
  });
}

function sizeMismatch(expected: number, declared: string | undefined) {
  return new DomainError("upload_size_mismatch", {
    message: `This part accepts exactly ${expected} bytes.`,
    details: { expected_bytes: expected, declared_content_length: declared === undefined ? null : Number(declared) },
  });
}

/** The URL's signature checked against the upload id, part, type and size the request sends, without D1. */
const vouches = (c: Context<AppEnv>) => {
  const contentType = c.req.header("content-type");
  return vouchesForPart(
    keyringOf(c.env),
    {
      id: c.req.param("upload_id") ?? "",
      partNumber: Number(c.req.param("part_number")),
      contentType: contentType ? normalizeContentType(contentType) : undefined,
      contentLength: c.req.header("content-length"),
    },
    c.req.query("expires"),
    c.req.query("sig"),
  );
};

export const localPartApp = new Hono<AppEnv>().put(
  "/uploads/:upload_id/parts/:part_number",
  signedUrlRoute(localPart, vouches),
);
