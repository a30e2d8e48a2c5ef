import { and, asc, eq, gt } from "drizzle-orm";
import type { Db } from "../db/client";
import { type DeliveryDestination, type Listing, type MediaUpload, mediaUploads, type User } from "../db/schema";
import type { Keyring } from "../lib/crypto/keyring";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";
import type { OutboundPolicy } from "../lib/outbound-url";
import { saveDestination } from "./delivery/destinations";
import { type PutOutcome, putObject, type S3Destination } from "./delivery/s3-put";
import { partSizeOf } from "./policy";
import { r2Call } from "./r2-call";
import { dropParts, multipartOf, storedParts } from "./uploads/multipart";
import { settleUpload } from "./uploads/records";

/**
 * What a sandbox destination does with a delivery: `accept` stores the files in the
 * service's own bucket, `refuse` answers like a bucket that denies access (a permanent
 * failure, so the delivery ends `failed` after its first attempt).
 */
export const SANDBOX_BEHAVIOURS = ["accept", "refuse"] as const;
type SandboxBehaviour = (typeof SANDBOX_BEHAVIOURS)[number];

/** Where an accepting sandbox destination's files land in the service's own bucket. */
export const SANDBOX_DELIVERY_PREFIX = "sandbox-deliveries";
const SANDBOX_SCHEME = "sandbox:";

/** `accept` or `refuse` for a sandbox destination's endpoint (`sandbox://accept`), undefined for real storage. */
function sandboxBehaviour(endpointUrl: string): SandboxBehaviour | undefined {
  if (!endpointUrl.startsWith(`${SANDBOX_SCHEME}//`)) return undefined;
  const behaviour = endpointUrl.slice(SANDBOX_SCHEME.length + 2);
  return (SANDBOX_BEHAVIOURS as readonly string[]).includes(behaviour) ? (behaviour as SandboxBehaviour) : "refuse";
}

/**
 * Sets a user's delivery destination to the sandbox's storage, through the same code the
 * dashboard sets real storage with. Its endpoint has the `sandbox:` scheme, which the
 * dashboard's rule for endpoints (https only) never accepts, so only the sandbox's test
 * helpers can set one; it holds no real credentials.
 */
export function saveSandboxDestination(
  db: Db,
  keyring: Keyring,
  user: User,
  input: { behaviour: SandboxBehaviour; pathPrefix: string },
): Promise<DeliveryDestination> {
  return saveDestination(db, keyring, user, {
    endpointUrl: `${SANDBOX_SCHEME}//${input.behaviour}`,
    bucket: SANDBOX_DELIVERY_PREFIX,
    region: "auto",
    addressingStyle: "path",
    accessKeyId: "sandbox",
    secretAccessKey: "sandbox",
    pathPrefix: input.pathPrefix,
  });
}

/**
 * Copies one file to a delivery's destination: an S3 PUT to real storage, or, for a
 * sandbox destination, a write under `sandbox-deliveries/<agency_id>/` of the service's
 * own bucket (or the refusal it was set to answer).
 */
export async function deliverFile(
  env: Env,
  agencyId: string,
  dest: S3Destination,
  key: string,
  body: ReadableStream,
  meta: { contentType: string; size: number },
  policy: OutboundPolicy,
): Promise<PutOutcome> {
  const behaviour = sandboxBehaviour(dest.endpointUrl);
  if (!behaviour) return putObject(dest, key, body, meta, policy);
  if (behaviour === "refuse") {
    // Like a bucket that answers 403 before it reads the request: the body is left unread.
    return { ok: false, permanent: true, error: "HTTP 403 AccessDenied (sandbox destination set to refuse)" };
  }
  const sized = new FixedLengthStream(meta.size);
  const piped = body.pipeTo(sized.writable).then(
    () => true,
    () => false,
  );
  try {
    await env.UPLOADS.put(`${SANDBOX_DELIVERY_PREFIX}/${agencyId}/${key}`, sized.readable, {
      httpMetadata: { contentType: meta.contentType },
    });
  } catch (err) {
    return {
      ok: false,
      permanent: false,
      error: `sandbox storage: ${err instanceof Error ? err.message : String(err)}`,
    };
  }
  return (await piped) ? { ok: true } : { ok: false, permanent: false, error: "sandbox storage: the copy broke off" };
}

/** Uploads completed by one call; a listing with more pending is completed by the next call. */
export const COMPLETE_UPLOADS_LIMIT = 50;

/**
 * The file of an upload sent in parts, joined in R2 when every part arrived whole; else
 * its parts are dropped (R2 holds none of them after) and the answer is null.
 */
async function joinedParts(db: Db, env: Env, upload: MediaUpload): Promise<R2Object | null> {
  const m = multipartOf(upload);
  const parts = await storedParts(db, env, m);
  const whole =
    parts.length === m.plan.partCount && parts.every((p) => p.sizeBytes === partSizeOf(m.plan, p.partNumber));
  if (whole) {
    const mpu = env.UPLOADS.resumeMultipartUpload(upload.objectKey, m.upload.multipartId);
    const list = parts.map((p) => ({ partNumber: p.partNumber, etag: p.etag }));
    const object = await r2Call("completeMultipartUpload", mpu.complete(list)).catch(() => null);
    if (object?.size === upload.sizeBytes) return object;
  }
  await dropParts(env, upload);
  return null;
}

const placeholder = (uploadId: string) => new TextEncoder().encode(`sandbox placeholder for ${uploadId}\n`);

/**
 * Completes a listing's pending uploads (those whose URL is still valid) as if their
 * bytes had arrived: a small placeholder object is written at each upload's key (an
 * upload in parts whose every part arrived is joined instead; else its parts are dropped), then
 * the upload is settled through the same path as the upload PUT, so the last one to
 * settle starts the delivery to the agent's storage (when one is configured), which the
 * media queue's consumer runs like any other. Running it again completes only what is
 * still pending, so a repeat after a lost answer does no harm.
 */
export async function completePendingUploads(
  db: Db,
  env: Env,
  listing: Pick<Listing, "id" | "agencyId" | "listingNumber">,
  now = new Date(),
): Promise<{ completed: string[]; deliveryId: string | null; morePending: boolean }> {
  const pending = await db
    .select()
    .from(mediaUploads)
    .where(
      and(
        eq(mediaUploads.listingId, listing.id),
        eq(mediaUploads.agencyId, listing.agencyId),
        eq(mediaUploads.status, "pending"),
        gt(mediaUploads.expiresAt, nowIso(now.getTime())),
      ),
    )
    .orderBy(asc(mediaUploads.createdAt), asc(mediaUploads.id))
    .limit(COMPLETE_UPLOADS_LIMIT + 1);
  if (!pending.length)
    throw new DomainError("no_pending_uploads", { details: { listing_number: listing.listingNumber } });
  const completed: string[] = [];
  let deliveryId: string | null = null;
  for (const upload of pending.slice(0, COMPLETE_UPLOADS_LIMIT)) {
    // Bytes that did arrive (a pre-signed PUT not yet reported) are kept, never overwritten.
    const joined = upload.multipartId ? await joinedParts(db, env, upload) : null;
    const head = joined ?? (await env.UPLOADS.head(upload.objectKey));
    const arrived = head !== null && head.size === upload.sizeBytes;
    // The placeholder is written only over what the head saw (nothing, or a short object): bytes that
    // arrive in between win, and are what the upload settles with.
    const placed = arrived
      ? null
      : await env.UPLOADS.put(upload.objectKey, placeholder(upload.id), {
          httpMetadata: { contentType: upload.contentType },
          customMetadata: { upload_id: upload.id, sandbox_placeholder: "true" },
          onlyIf: head ? { etagMatches: head.etag } : { etagDoesNotMatch: "*" },
        });
    const stored = arrived ? head : (placed ?? (await env.UPLOADS.head(upload.objectKey)));
    // Gone again between the two calls (deleted meanwhile): nothing to settle with yet; a retry sees what is there.
    if (!stored) throw new DomainError("service_unavailable", { retryAfter: 1 });
    let settled: Awaited<ReturnType<typeof settleUpload>>;
    try {
      settled = await settleUpload(db, env, upload, { status: "completed", etag: stored.etag }, now);
    } catch (err) {
      // As on the upload PUT: the delivery could not be queued, so the placeholder is taken back.
      if (placed) await env.UPLOADS.delete(upload.objectKey);
      throw err;
    }
    if (settled.settled) completed.push(upload.id);
    deliveryId = settled.deliveryId ?? deliveryId;
  }
  return { completed, deliveryId, morePending: pending.length > COMPLETE_UPLOADS_LIMIT };
}
