import { AwsV4Signer } from "aws4fetch";
import { keyringOf } from "../lib/crypto/keyring";
import { R2_SINGLE_PUT_MAX_BYTES } from "./policy";
import { localUploadUrl } from "./uploads/local-signing";

/** How long an upload URL stays valid. */
export const UPLOAD_URL_TTL_SECONDS = 15 * 60;

/** Where and how the client PUTs the file's bytes. */
interface UploadTarget {
  method: "PUT";
  url: string;
  /** Headers the PUT must carry exactly: the URL's signature covers them. */
  headers: { "Content-Type": string; "Content-Length": string; "If-None-Match"?: "*" };
  expiresAt: Date;
}

export interface R2Credentials {
  accountId: string;
  accessKeyId: string;
  secretAccessKey: string;
  bucket: string;
}

/** R2's S3 credentials when every part is configured; otherwise uploads go through the Worker. */
export function r2Credentials(env: Env): R2Credentials | undefined {
  const { R2_ACCOUNT_ID, R2_ACCESS_KEY_ID, R2_SECRET_ACCESS_KEY, R2_BUCKET_NAME } = env;
  if (!R2_ACCOUNT_ID || !R2_ACCESS_KEY_ID || !R2_SECRET_ACCESS_KEY || !R2_BUCKET_NAME) return undefined;
  return {
    accountId: R2_ACCOUNT_ID,
    accessKeyId: R2_ACCESS_KEY_ID,
    secretAccessKey: R2_SECRET_ACCESS_KEY,
    bucket: R2_BUCKET_NAME,
  };
}

/** Each key segment percent-encoded as RFC 3986 asks (S3's canonical form), slashes kept. */
export const encodeKey = (key: string) =>
  key
    .split("/")
    .map((segment) =>
      encodeURIComponent(segment).replace(/[!'()*]/g, (ch) => `%${ch.charCodeAt(0).toString(16).toUpperCase()}`),
    )
    .join("/");

const amzDate = (d: Date) => d.toISOString().replace(/[:-]|\.\d{3}/g, "");

/**
 * A SigV4 query-signed PUT to R2's S3 endpoint. Content-Type and Content-Length are
 * signed headers, so R2 refuses a PUT of another type or size. `If-None-Match: *` is
 * signed too: R2 writes the object only if the key holds none yet, so the URL stores at
 * most one object, and a second PUT is refused (412) instead of replacing the first.
 */
export async function presignR2(
  creds: R2Credentials,
  objectKey: string,
  contentType: string,
  sizeBytes: number,
  now = new Date(),
  ttlSeconds = UPLOAD_URL_TTL_SECONDS,
): Promise<UploadTarget> {
  // A larger file goes up in parts: R2 would refuse this PUT whatever its signature.
  if (sizeBytes > R2_SINGLE_PUT_MAX_BYTES) throw new RangeError(`${sizeBytes} bytes is above R2's single PUT`);
  const url = new URL(`https://${creds.accountId}.r2.cloudflarestorage.com/${creds.bucket}/${encodeKey(objectKey)}`);
  const headers = { "Content-Type": contentType, "Content-Length": String(sizeBytes), "If-None-Match": "*" as const };
  return {
    method: "PUT",
    url: await signPut(creds, url, headers, now, ttlSeconds),
    headers,
    expiresAt: expiry(now, ttlSeconds),
  };
}

export const expiry = (now: Date, ttlSeconds: number) => new Date(now.getTime() + ttlSeconds * 1000);

/**
 * `url` query-signed (SigV4) for a PUT carrying exactly `headers`, valid `ttlSeconds`.
 * Every header is signed (aws4fetch leaves Content-Type, Content-Length and If-None-Match
 * unsigned unless told otherwise), so R2 refuses a PUT whose headers differ.
 */
export async function signPut(
  creds: R2Credentials,
  url: URL,
  headers: Record<string, string>,
  now: Date,
  ttlSeconds: number,
): Promise<string> {
  url.searchParams.set("X-Amz-Expires", String(ttlSeconds));
  const signer = new AwsV4Signer({
    method: "PUT",
    url: url.toString(),
    headers,
    accessKeyId: creds.accessKeyId,
    secretAccessKey: creds.secretAccessKey,
    service: "s3",
    region: "auto",
    datetime: amzDate(now),
    signQuery: true,
    allHeaders: true,
  });
  return (await signer.sign()).url.toString();
}

/**
 * Where an upload's bytes go until `expiresAt`: R2 directly where credentials exist,
 * else the Worker's signed path. Signing again later (a replayed response) keeps the
 * upload's own expiry.
 */
export async function uploadTarget(
  env: Env,
  origin: string,
  upload: { id: string; objectKey: string; contentType: string; sizeBytes: number },
  expiresAt: Date,
  now = new Date(),
): Promise<UploadTarget> {
  const creds = r2Credentials(env);
  if (creds) {
    const ttl = Math.max(1, Math.floor((expiresAt.getTime() - now.getTime()) / 1000));
    return presignR2(creds, upload.objectKey, upload.contentType, upload.sizeBytes, now, ttl);
  }
  return {
    method: "PUT",
    url: await localUploadUrl(keyringOf(env), origin, upload, expiresAt),
    headers: { "Content-Type": upload.contentType, "Content-Length": String(upload.sizeBytes) },
    expiresAt,
  };
}
