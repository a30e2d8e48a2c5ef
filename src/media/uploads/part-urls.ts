import type { MediaUpload } from "../../db/schema";
import { keyringOf } from "../../lib/crypto/keyring";
import { type PartPlan, partSizeOf } from "../policy";
import { encodeKey, expiry, type R2Credentials, r2Credentials, signPut, UPLOAD_URL_TTL_SECONDS } from "../presign";
import { localPartUrl } from "./local-signing";

/** Where and how the client PUTs one part of a multipart upload. */
export interface PartTarget {
  partNumber: number;
  method: "PUT";
  url: string;
  /** Headers the PUT must carry exactly: the URL's signature covers them. */
  headers: { "Content-Type": string; "Content-Length": string };
  expiresAt: Date;
}

/** A multipart upload as the signing needs it: its object, R2's upload id and how it is cut. */
type MultipartUpload = Pick<MediaUpload, "id" | "objectKey" | "contentType"> & { multipartId: string };

/** R2's S3 endpoint for the object, with the query a multipart request names itself by. */
export const r2ObjectUrl = (creds: R2Credentials, objectKey: string) =>
  new URL(`https://${creds.accountId}.r2.cloudflarestorage.com/${creds.bucket}/${encodeKey(objectKey)}`);

/**
 * A SigV4 query-signed S3 `UploadPart` (`PUT ?partNumber=n&uploadId=…`). Content-Length and
 * Content-Type are signed headers, so R2 refuses a part of another size.
 */
async function presignR2Part(
  creds: R2Credentials,
  upload: MultipartUpload,
  partNumber: number,
  partBytes: number,
  now: Date,
  ttlSeconds: number,
): Promise<PartTarget> {
  const url = r2ObjectUrl(creds, upload.objectKey);
  url.searchParams.set("partNumber", String(partNumber));
  url.searchParams.set("uploadId", upload.multipartId);
  const headers = { "Content-Type": upload.contentType, "Content-Length": String(partBytes) };
  const signed = await signPut(creds, url, headers, now, ttlSeconds);
  return { partNumber, method: "PUT", url: signed, headers, expiresAt: expiry(now, ttlSeconds) };
}

/**
 * Signed URLs for the given parts, each valid for 15 minutes (never past the upload's own
 * deadline): R2 directly where credentials exist, else the Worker's signed part path.
 */
export async function partTargets(
  env: Env,
  origin: string,
  upload: MultipartUpload & { expiresAt: string },
  plan: PartPlan,
  partNumbers: number[],
  now = new Date(),
): Promise<PartTarget[]> {
  const deadline = Math.min(new Date(upload.expiresAt).getTime(), now.getTime() + UPLOAD_URL_TTL_SECONDS * 1000);
  const ttl = Math.max(1, Math.floor((deadline - now.getTime()) / 1000));
  const creds = r2Credentials(env);
  const keyring = keyringOf(env);
  return Promise.all(
    partNumbers.map(async (n) => {
      const partBytes = partSizeOf(plan, n);
      if (creds) return presignR2Part(creds, upload, n, partBytes, now, ttl);
      const expiresAt = new Date(now.getTime() + ttl * 1000);
      const url = await localPartUrl(
        keyring,
        origin,
        { id: upload.id, contentType: upload.contentType, partNumber: n, partBytes },
        expiresAt,
      );
      const headers = { "Content-Type": upload.contentType, "Content-Length": String(partBytes) };
      return { partNumber: n, method: "PUT" as const, url, headers, expiresAt };
    }),
  );
}
