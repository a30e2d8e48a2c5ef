import { AwsV4Signer } from "aws4fetch";
import { readCapped } from "../../lib/capped-read";
import { DomainError } from "../../lib/errors";
import type { R2Credentials } from "../presign";
import { r2ObjectUrl } from "./part-urls";

/** A part R2 holds for a multipart upload. */
export interface StoredPart {
  partNumber: number;
  sizeBytes: number;
  etag: string;
}

const LIST_TIMEOUT_MS = 30_000;
/** A page of at most 1,000 parts is about 200 bytes each; a larger answer is refused. */
const LIST_BODY_LIMIT = 512 * 1024;

const unavailable = () => new DomainError("service_unavailable", { retryAfter: 5 });

const field = (xml: string, name: string) => new RegExp(`<${name}>([^<]{1,200})</${name}>`).exec(xml)?.[1];

/**
 * The parts R2 holds for an upload, through S3's ListParts (the R2 binding cannot list
 * them). One page of up to 1,000 parts: a file never has more (see MAX_PARTS). Signed in
 * headers, bounded in time, no redirect followed. R2 not knowing the upload (it was completed
 * or aborted there) is 409 `upload_closed`; no answer in time, a redirect, another refusal or
 * an answer too large is 503 `service_unavailable`, for the client to retry.
 */
export async function listR2Parts(
  creds: R2Credentials,
  { uploadId, objectKey, multipartId }: { uploadId: string; objectKey: string; multipartId: string },
) {
  const url = r2ObjectUrl(creds, objectKey);
  url.searchParams.set("uploadId", multipartId);
  url.searchParams.set("max-parts", "1000");
  const signed = await new AwsV4Signer({
    method: "GET",
    url: url.toString(),
    accessKeyId: creds.accessKeyId,
    secretAccessKey: creds.secretAccessKey,
    service: "s3",
    region: "auto",
  }).sign();
  const res = await fetch(signed.url.toString(), {
    method: "GET",
    headers: signed.headers,
    redirect: "manual",
    signal: AbortSignal.timeout(LIST_TIMEOUT_MS),
  }).catch(() => undefined);
  if (!res) throw unavailable();
  const body = await readCapped(res.body, LIST_BODY_LIMIT);
  if (res.status === 404 && body && new TextDecoder().decode(body).includes("<Code>NoSuchUpload</Code>")) {
    throw new DomainError("upload_closed", { details: { upload_id: uploadId } });
  }
  if (!res.ok || !body) throw unavailable();
  const xml = new TextDecoder().decode(body);
  const parts: StoredPart[] = [];
  for (const [, inner] of xml.matchAll(/<Part>([\s\S]*?)<\/Part>/g)) {
    const partNumber = Number(field(inner!, "PartNumber"));
    const sizeBytes = Number(field(inner!, "Size"));
    const etag = field(inner!, "ETag")?.replaceAll("&quot;", '"').replace(/^"|"$/g, "");
    if (Number.isInteger(partNumber) && Number.isInteger(sizeBytes) && etag)
      parts.push({ partNumber, sizeBytes, etag });
  }
  return parts;
}
