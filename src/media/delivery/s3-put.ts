import { AwsV4Signer } from "aws4fetch";
import { readCapped } from "../../lib/capped-read";
import { checkOutboundUrl, type OutboundPolicy } from "../../lib/outbound-url";
import { outboundTraceparent } from "../../lib/telemetry/trace";
import { encodeKey } from "../presign";

/** The signed headers and, unsigned (storage ignores it in the signature), this call's `traceparent`. */
function traced(signed: Headers): Headers {
  const headers = new Headers(signed);
  const traceparent = outboundTraceparent();
  if (traceparent) headers.set("traceparent", traceparent);
  return headers;
}

/** An S3-compatible bucket (AWS S3, R2, Backblaze B2, Wasabi, MinIO) with its credentials in the clear. */
export interface S3Destination {
  endpointUrl: string;
  bucket: string;
  region: string;
  addressingStyle: "path" | "virtual";
  accessKeyId: string;
  secretAccessKey: string;
}

export type PutOutcome = { ok: true } | { ok: false; permanent: boolean; error: string };

/** The object's URL: `endpoint/bucket/key` (path style) or `bucket.endpoint/key` (virtual-hosted style). */
function objectUrl(dest: Pick<S3Destination, "endpointUrl" | "bucket" | "addressingStyle">, key: string): string {
  const endpoint = new URL(dest.endpointUrl);
  const base = endpoint.pathname.replace(/\/+$/, "");
  if (dest.addressingStyle === "virtual") {
    return `${endpoint.protocol}//${dest.bucket}.${endpoint.host}${base}/${encodeKey(key)}`;
  }
  return `${endpoint.protocol}//${endpoint.host}${base}/${encodeURIComponent(dest.bucket)}/${encodeKey(key)}`;
}

/** A PUT may carry a video of nearly 5 GiB; past this it is abandoned and retried later. */
const PUT_TIMEOUT_MS = 10 * 60_000;
/** An error answer is read this far for its S3 error code; the rest is dropped. */
const ERROR_BODY_LIMIT = 16 * 1024;

/** Why a refused PUT failed, in S3's own words when the body says (`<Code>AccessDenied</Code>`). */
async function describe(res: Response): Promise<string> {
  const bytes = await readCapped(res.body, ERROR_BODY_LIMIT).catch(() => undefined);
  const code = bytes ? /<Code>([^<]{1,100})<\/Code>/.exec(new TextDecoder().decode(bytes))?.[1] : undefined;
  return `HTTP ${res.status}${code ? ` ${code}` : ""}`;
}

/**
 * One SigV4-signed PUT of a whole object. The payload is streamed unsigned (S3's
 * `UNSIGNED-PAYLOAD`) with a fixed length, since S3 refuses chunked uploads without one.
 * The object URL passes the outbound policy first (the destination may have changed
 * since it was configured), no redirect is followed (a 3xx is a refusal), and the PUT
 * is bounded in time. Throttling, timeouts, server errors and network failures are worth
 * retrying; any other refusal (credentials, bucket, policy) is not.
 */
export async function putObject(
  dest: S3Destination,
  key: string,
  body: ReadableStream | ArrayBuffer | string,
  meta: { contentType: string; size: number },
  policy: OutboundPolicy,
): Promise<PutOutcome> {
  const target = checkOutboundUrl(objectUrl(dest, key), policy);
  if (!target.ok) {
    if (body instanceof ReadableStream) await body.cancel().catch(() => {});
    return { ok: false, permanent: true, error: `destination refused: endpoint_url ${target.reason}` };
  }
  const signer = new AwsV4Signer({
    method: "PUT",
    url: target.url,
    headers: { "Content-Type": meta.contentType, "X-Amz-Content-Sha256": "UNSIGNED-PAYLOAD" },
    accessKeyId: dest.accessKeyId,
    secretAccessKey: dest.secretAccessKey,
    service: "s3",
    region: dest.region,
  });
  const signed = await signer.sign();
  let payload: ReadableStream | ArrayBuffer | string = body;
  if (body instanceof ReadableStream) {
    const sized = new FixedLengthStream(meta.size);
    body.pipeTo(sized.writable).catch(() => {});
    payload = sized.readable;
  }
  let res: Response;
  try {
    res = await fetch(
      new Request(signed.url.toString(), {
        method: "PUT",
        headers: traced(signed.headers),
        body: payload,
        redirect: "manual",
        signal: AbortSignal.timeout(PUT_TIMEOUT_MS),
      }),
    );
  } catch (err) {
    if (err instanceof Error && err.name === "TimeoutError")
      return { ok: false, permanent: false, error: `no answer within ${PUT_TIMEOUT_MS / 1000} s` };
    return { ok: false, permanent: false, error: `network: ${err instanceof Error ? err.message : String(err)}` };
  }
  if (res.ok) {
    await res.body?.cancel();
    return { ok: true };
  }
  if (res.status >= 300 && res.status < 400) {
    await res.body?.cancel();
    return { ok: false, permanent: true, error: `HTTP ${res.status} redirect (not followed)` };
  }
  const transient = res.status === 408 || res.status === 429 || res.status >= 500;
  return { ok: false, permanent: !transient, error: await describe(res) };
}
