import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { drizzle } from "drizzle-orm/d1";
import { afterEach, describe, expect, it, vi } from "vitest";
import { mediaUploads } from "../../src/db/schema";
import { MULTIPART_THRESHOLD_BYTES } from "../../src/media/policy";
import {
  captureErrorLogs,
  direct,
  expectError,
  keyed,
  makeTenant,
  mockFetch,
  type Outbound,
  type Tenant,
} from "../support/harness";
import { expectedSignature } from "../support/sigv4";

const MiB = 1024 * 1024;
const creds = {
  R2_ACCOUNT_ID: "0123456789abcdef0123456789abcdef",
  R2_ACCESS_KEY_ID: "AKIDEXAMPLE0002",
  R2_SECRET_ACCESS_KEY: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
  R2_BUCKET_NAME: "alms-uploads-test",
};
const R2_HOST = `${creds.R2_ACCOUNT_ID}.r2.cloudflarestorage.com`;
const uploadPath = (id: string) => `/api/v1/media/uploads/${id}`;

afterEach(() => vi.restoreAllMocks());

/** The public API with R2's credentials configured, so parts go to R2's S3 endpoint directly. */
function r2Api(path: string, key: string, body?: unknown) {
  const init: RequestInit =
    body === undefined
      ? {}
      : {
          method: "POST",
          body: JSON.stringify(body),
          headers: { "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        };
  return direct(keyed(path, key, init), creds);
}

/** A file of two parts, announced with R2's credentials; the multipart upload itself is the local R2's. */
async function announce(t: Tenant) {
  const size = MULTIPART_THRESHOLD_BYTES + 3 * MiB;
  const r = await r2Api("/api/v1/media/upload", t.key, {
    asset_type: "video",
    content_type: "video/mp4",
    size_bytes: size,
    filename: "tour one.mp4",
  });
  expect(r.status, r.text).toBe(201);
  const [row] = await drizzle(env.DB).select().from(mediaUploads).where(eq(mediaUploads.id, r.json.upload_id));
  expect(row?.multipartId, JSON.stringify(row)).toBeTruthy();
  return { id: r.json.upload_id as string, size, objectKey: row!.objectKey, multipartId: row!.multipartId! };
}

/** ListParts as R2 answers it (S3's documented `ListPartsResult`); R2 writes ETag quotes escaped or bare. */
const listPartsXml = (uploadId: string, key: string, parts: { n: number; etag: string; size: number }[]) =>
  [
    '<?xml version="1.0" encoding="UTF-8"?>',
    '<ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">',
    `<Bucket>${creds.R2_BUCKET_NAME}</Bucket><Key>${key}</Key><UploadId>${uploadId}</UploadId>`,
    "<StorageClass>STANDARD</StorageClass><PartNumberMarker>0</PartNumberMarker>",
    `<NextPartNumberMarker>${parts.at(-1)?.n ?? 0}</NextPartNumberMarker>`,
    "<MaxParts>1000</MaxParts><IsTruncated>false</IsTruncated>",
    ...parts.map(
      (p, i) =>
        `<Part><PartNumber>${p.n}</PartNumber><LastModified>2026-11-25T10:00:0${i}.000Z</LastModified>` +
        `<ETag>${i % 2 ? `"${p.etag}"` : `&quot;${p.etag}&quot;`}</ETag><Size>${p.size}</Size></Part>`,
    ),
    "</ListPartsResult>",
  ].join("\n");

describe("part URLs signed for R2", () => {
  it("carry the part number, R2's upload id, the signed size and type, and a 15-minute expiry", async () => {
    const t = await makeTenant();
    const up = await announce(t);
    const r = await r2Api(`${uploadPath(up.id)}/part-urls?part_numbers=1,2`, t.key);
    expect(r.status, r.text).toBe(200);
    const sizes = [64 * MiB, up.size - 64 * MiB];
    for (const [i, part] of (
      r.json.parts as { part_number: number; url: string; headers: Record<string, string> }[]
    ).entries()) {
      const url = new URL(part.url);
      expect(url.host).toBe(R2_HOST);
      expect(decodeURIComponent(url.pathname)).toBe(`/${creds.R2_BUCKET_NAME}/${up.objectKey}`);
      expect(url.searchParams.get("partNumber")).toBe(String(i + 1));
      expect(url.searchParams.get("uploadId")).toBe(up.multipartId);
      expect(url.searchParams.get("X-Amz-SignedHeaders")).toBe("content-length;content-type;host");
      expect(url.searchParams.get("X-Amz-Credential")).toMatch(
        new RegExp(`^${creds.R2_ACCESS_KEY_ID}/\\d{8}/auto/s3/`),
      );
      const expires = Number(url.searchParams.get("X-Amz-Expires"));
      expect(expires).toBeGreaterThan(14 * 60);
      expect(expires).toBeLessThanOrEqual(15 * 60);
      expect(part.headers).toEqual({ "Content-Type": "video/mp4", "Content-Length": String(sizes[i]) });
      const signature = url.searchParams.get("X-Amz-Signature");
      expect(signature).toBe(await expectedSignature(url, "PUT", part.headers, creds.R2_SECRET_ACCESS_KEY));
      // Another size needs another signature: R2 refuses a part of any other length.
      const other = { ...part.headers, "Content-Length": String(sizes[i]! + 1) };
      expect(signature).not.toBe(await expectedSignature(url, "PUT", other, creds.R2_SECRET_ACCESS_KEY));
    }
  });
});

describe("the stored parts, listed through R2's ListParts", () => {
  it("signs the request, bounds it in time, follows no redirect and reads R2's XML", async () => {
    const t = await makeTenant();
    const up = await announce(t);
    const seen: { req: Request; init?: RequestInit }[] = [];
    const timeouts = vi.spyOn(AbortSignal, "timeout");
    mockFetch((req, init) => {
      seen.push({ req, init });
      const xml = listPartsXml(up.multipartId, up.objectKey, [
        { n: 1, etag: "0a1b2c3d4e5f60718293a4b5c6d7e8f9", size: 64 * MiB },
      ]);
      return new Response(xml, { status: 200, headers: { "Content-Type": "application/xml" } });
    });
    const r = await r2Api(`${uploadPath(up.id)}/parts`, t.key);
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({
      parts: [{ part_number: 1, size_bytes: 64 * MiB, etag: "0a1b2c3d4e5f60718293a4b5c6d7e8f9" }],
      missing_part_numbers: [2],
    });
    expect(seen).toHaveLength(1);
    const { req, init } = seen[0]!;
    const url = new URL(req.url);
    expect(req.method).toBe("GET");
    expect(url.host).toBe(R2_HOST);
    expect(decodeURIComponent(url.pathname)).toBe(`/${creds.R2_BUCKET_NAME}/${up.objectKey}`);
    expect(url.searchParams.get("uploadId")).toBe(up.multipartId);
    expect(url.searchParams.get("max-parts")).toBe("1000");
    expect(req.headers.get("authorization")).toMatch(
      new RegExp(`^AWS4-HMAC-SHA256 Credential=${creds.R2_ACCESS_KEY_ID}/\\d{8}/auto/s3/aws4_request`),
    );
    expect(init?.redirect).toBe("manual");
    expect(init?.signal).toBeInstanceOf(AbortSignal);
    expect(timeouts).toHaveBeenCalledWith(30_000);
  });

  it("answers every part in R2's answer, escaped quotes or bare", async () => {
    const t = await makeTenant();
    const up = await announce(t);
    const parts = [
      { n: 1, etag: "11111111111111111111111111111111", size: 64 * MiB },
      { n: 2, etag: "22222222222222222222222222222222", size: up.size - 64 * MiB },
    ];
    mockFetch(() => new Response(listPartsXml(up.multipartId, up.objectKey, parts), { status: 200 }));
    const r = await r2Api(`${uploadPath(up.id)}/parts`, t.key);
    expect(r.status, r.text).toBe(200);
    expect(r.json.parts).toEqual(parts.map((p) => ({ part_number: p.n, size_bytes: p.size, etag: p.etag })));
    expect(r.json.missing_part_numbers).toEqual([]);
  });

  const failures: [string, Outbound][] = [
    ["an error answer", () => new Response("<Error><Code>InternalError</Code></Error>", { status: 500 })],
    ["a redirect", () => new Response(null, { status: 307, headers: { Location: "https://elsewhere.test/" } })],
    ["no answer in time", () => Promise.reject(new DOMException("The operation timed out.", "TimeoutError"))],
    ["an answer too large", () => new Response(`<ListPartsResult>${" ".repeat(600 * 1024)}</ListPartsResult>`)],
  ];
  for (const [what, answer] of failures) {
    it(`is 503 service_unavailable after ${what}, and asks once`, async () => {
      const t = await makeTenant();
      const up = await announce(t);
      const spy = mockFetch(answer);
      const logs = captureErrorLogs();
      const r = await r2Api(`${uploadPath(up.id)}/parts`, t.key);
      expectError(r, 503, "service_unavailable");
      expect(r.headers.get("retry-after"), r.text).toBeTruthy();
      expect(spy).toHaveBeenCalledTimes(1);
      expect(logs.filter((l) => l.console === "error")).toEqual([]);
    });
  }

  it("is 409 upload_closed when R2 no longer knows the upload", async () => {
    const t = await makeTenant();
    const up = await announce(t);
    mockFetch(
      () =>
        new Response(
          '<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified multipart upload does not exist.</Message></Error>',
          { status: 404 },
        ),
    );
    const r = await r2Api(`${uploadPath(up.id)}/parts`, t.key);
    expectError(r, 409, "upload_closed");
    expect(r.json.error.details).toMatchObject({ upload_id: up.id });
  });
});
