import { type Context, Hono } from "hono";
import { signedUrlRoute } from "../../http/admission/auth-throttle";
import type { AppEnv } from "../../http/env";
import { routeToNamed } from "../../http/shard-route";
import { keyringOf } from "../../lib/crypto/keyring";
import { DomainError } from "../../lib/errors";
import { normalizeContentType } from "../../media/policy";
import { checkLocalUploadUrl, vouchesForUpload } from "../../media/uploads/local-signing";
import { findUpload, settleUpload } from "../../media/uploads/records";

/** Where an upload is sent when R2 is not signed for directly. */
export const LOCAL_UPLOAD_PATH = "/uploads/{upload_id}";

/**
 * PUT /uploads/{upload_id}?expires=…&sig=…: the upload URL where R2 is not signed for
 * directly. The signed URL is the only credential, and it works once: the body is
 * streamed into R2 through a fixed-length stream (a body of any other size fails before
 * an object exists) with a create-only condition, so of two PUTs at once exactly one
 * stores its object and the other is 409 `upload_already_completed`; an object is never
 * half-written or written over.
 */
async function localUpload(c: Context<AppEnv>) {
  await routeToNamed(c, "upload", c.req.param("upload_id"));
  const db = c.var.db;
  const upload = await findUpload(db, c.req.param("upload_id") ?? "");
  if (!upload) throw new DomainError("upload_url_invalid");
  const check = await checkLocalUploadUrl(keyringOf(c.env), upload, c.req.query("expires"), c.req.query("sig"));
  if (check === "invalid") throw new DomainError("upload_url_invalid");
  if (check === "expired" || upload.status === "expired") throw new DomainError("upload_url_expired");
  if (upload.status === "completed") throw alreadyCompleted(upload.id);

  const received = c.req.header("content-type");
  if (!received || normalizeContentType(received) !== upload.contentType) {
    throw new DomainError("request_content_type_mismatch", {
      message: `This upload accepts Content-Type ${upload.contentType} only.`,
      details: { received: received ?? null, accepted: [upload.contentType] },
    });
  }
  const declared = c.req.header("content-length");
  const body = c.req.raw.body;
  if ((declared !== undefined && Number(declared) !== upload.sizeBytes) || !body)
    throw sizeMismatch(upload.sizeBytes, declared);

  const sized = new FixedLengthStream(upload.sizeBytes);
  const stopPipe = new AbortController();
  const piped = body.pipeTo(sized.writable, { signal: stopPipe.signal }).then(
    () => true,
    () => false,
  );
  let stored: R2Object | null = null;
  let failed = false;
  try {
    // Create-only: R2 checks the condition when the object commits, so a PUT that is
    // second to finish stores nothing and leaves the first one's object untouched.
    stored = await c.env.UPLOADS.put(upload.objectKey, sized.readable, {
      httpMetadata: { contentType: upload.contentType },
      customMetadata: { upload_id: upload.id },
      onlyIf: { etagDoesNotMatch: "*" },
    });
  } catch {
    failed = true;
  }
  if (!stored && !failed) {
    stopPipe.abort();
    await piped;
    throw alreadyCompleted(upload.id);
  }
  if (!(await piped) || !stored || stored.size !== upload.sizeBytes) {
    if (stored) await c.env.UPLOADS.delete(upload.objectKey);
    throw sizeMismatch(upload.sizeBytes, declared);
  }

  let settled: Awaited<ReturnType<typeof settleUpload>>;
  try {
    settled = await settleUpload(db, c.env, upload, { status: "completed", etag: stored.etag });
  } catch (err) {
    // The delivery could not be queued: take the bytes back so that retrying this PUT starts clean.
    await c.env.UPLOADS.delete(upload.objectKey);
    throw err;
  }
  if (!settled.settled) {
    // Settled by someone else meanwhile: completed with this very object, or expired while it streamed.
    const now = await findUpload(db, upload.id);
    if (now?.status !== "completed" || now.objectEtag !== stored.etag) {
      await c.env.UPLOADS.delete(upload.objectKey);
      throw new DomainError("upload_url_expired");
    }
  }
  return c.json(
    {
      upload_id: upload.id,
      status: "completed",
      size_bytes: stored.size,
      content_type: upload.contentType,
      delivery_id: settled.deliveryId,
    },
    200,
    { ETag: stored.httpEtag },
  );
}

function alreadyCompleted(uploadId: string) {
  return new DomainError("upload_already_completed", {
    message: "This upload URL was already used: the upload has its file. An upload URL stores exactly one file.",
    details: { upload_id: uploadId },
  });
}

function sizeMismatch(expected: number, declared: string | undefined) {
  return new DomainError("upload_size_mismatch", {
    message: `This upload accepts exactly ${expected} bytes.`,
    details: { expected_bytes: expected, declared_content_length: declared === undefined ? null : Number(declared) },
  });
}

/** The URL's signature checked against the upload id, type and size the request sends, without D1. */
const vouches = (c: Context<AppEnv>) =>
  vouchesForUpload(
    keyringOf(c.env),
    {
      id: c.req.param("upload_id") ?? "",
      contentType: normalizeOrUndefined(c.req.header("content-type")),
      contentLength: c.req.header("content-length"),
    },
    c.req.query("expires"),
    c.req.query("sig"),
  );

const normalizeOrUndefined = (value: string | undefined) => (value ? normalizeContentType(value) : undefined);

export const localUploadApp = new Hono<AppEnv>().put("/uploads/:upload_id", signedUrlRoute(localUpload, vouches));
