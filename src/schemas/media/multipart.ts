import { z } from "@hono/zod-openapi";
import { MAX_PARTS } from "../../media/policy";
import type { Multipart } from "../../media/uploads/multipart";
import type { PartTarget } from "../../media/uploads/part-urls";
import type { StoredPart } from "../../media/uploads/s3-list-parts";

/** At most this many part URLs are signed by one request. */
const MAX_PART_URLS = 100;

const partNumber = z
  .number()
  .int()
  .min(1)
  .max(MAX_PARTS)
  .openapi({ description: "The part's number, from 1 to the upload's `part_count`.", example: 1 });

export const partUrlsQuery = z.strictObject({
  part_numbers: z
    .string()
    .regex(/^\d{1,4}(,\d{1,4}){0,99}$/, `up to ${MAX_PART_URLS} part numbers, separated by commas`)
    .openapi({
      description: `The parts to sign, comma-separated (at most ${MAX_PART_URLS}), each from 1 to \`part_count\`.`,
      example: "1,2,3",
    }),
});

/** The distinct part numbers a `part_numbers` query names, in the order given. */
export const partNumbersOf = (query: string) => [...new Set(query.split(",").map(Number))];

const planFields = {
  upload_id: z.string().openapi({ description: "The upload's id.", example: "upl_0mhx3k2a1q8v2l0c9z7rj4" }),
  part_size_bytes: z
    .number()
    .int()
    .openapi({ description: "The size of every part but the last.", example: 67_108_864 }),
  part_count: z.number().int().openapi({ description: "How many parts the file is cut into.", example: 96 }),
  last_part_bytes: z.number().int().openapi({ description: "The size of the last part.", example: 67_108_864 }),
};

const PartUrlSchema = z
  .object({
    part_number: partNumber,
    method: z.literal("PUT").openapi({ description: "The HTTP method of the part's upload." }),
    url: z.string().openapi({
      description:
        "Where to PUT the part's bytes: a pre-signed URL (the storage's S3 `UploadPart`, or the service's own " +
        "signed part path). Send no API key with it.",
      example: "https://api.example.com/uploads/upl_0mhx3k2a/parts/1?expires=1795000000&sig=…",
    }),
    headers: z
      .object({
        "Content-Type": z.string().openapi({ example: "video/mp4" }),
        "Content-Length": z.string().openapi({ example: "67108864" }),
      })
      .openapi({ description: "Headers the PUT must carry with exactly these values; the signature covers them." }),
    size_bytes: z.number().int().openapi({ description: "The part's exact size in bytes.", example: 67_108_864 }),
    expires_at: z.string().openapi({
      description: "When the URL stops working (15 minutes, or the upload's own deadline). ISO 8601 UTC.",
      example: "2026-11-22T15:45:00.000Z",
    }),
  })
  .openapi("MediaUploadPartUrl");

export const PartUrlsSchema = z
  .object({ ...planFields, parts: z.array(PartUrlSchema).openapi({ description: "One URL per part asked for." }) })
  .openapi("MediaUploadPartUrls");

const StoredPartSchema = z
  .object({
    part_number: partNumber,
    size_bytes: z.number().int().openapi({ description: "The part's size in bytes.", example: 67_108_864 }),
    etag: z.string().openapi({
      description: "The part's ETag, as completion names it.",
      example: "d41d8cd98f00b204e9800998ecf8427e",
    }),
  })
  .openapi("MediaUploadStoredPart");

export const StoredPartsSchema = z
  .object({
    ...planFields,
    parts: z.array(StoredPartSchema).openapi({ description: "The parts stored so far, by part number." }),
    missing_part_numbers: z.array(z.number().int()).openapi({
      description: "The parts still to send: sign their URLs and PUT them, then complete.",
      example: [4, 5],
    }),
  })
  .openapi("MediaUploadStoredParts");

export const CompleteUploadSchema = z
  .strictObject({
    parts: z
      .array(
        z.strictObject({
          part_number: partNumber,
          etag: z.string().min(1).max(256).openapi({
            description: "The ETag the part's PUT answered (quotes optional).",
            example: "d41d8cd98f00b204e9800998ecf8427e",
          }),
        }),
      )
      .min(1)
      .max(MAX_PARTS)
      .openapi({ description: "Every part of the file, 1 to `part_count`, with its ETag." }),
  })
  .openapi("MediaUploadComplete");

export const AbortUploadSchema = z.strictObject({}).openapi("MediaUploadAbort");

const plan = ({ upload, plan }: Multipart) => ({
  upload_id: upload.id,
  part_size_bytes: plan.partSize,
  part_count: plan.partCount,
  last_part_bytes: plan.lastPartSize,
});

export const presentPartUrls = (m: Multipart, targets: PartTarget[]) => ({
  ...plan(m),
  parts: targets.map((t) => ({
    part_number: t.partNumber,
    method: t.method,
    url: t.url,
    headers: t.headers,
    size_bytes: Number(t.headers["Content-Length"]),
    expires_at: t.expiresAt.toISOString(),
  })),
});

export function presentStoredParts(m: Multipart, parts: StoredPart[]) {
  const stored = new Set(parts.map((p) => p.partNumber));
  const missing: number[] = [];
  for (let n = 1; n <= m.plan.partCount; n++) if (!stored.has(n)) missing.push(n);
  return {
    ...plan(m),
    parts: parts.map((p) => ({ part_number: p.partNumber, size_bytes: p.sizeBytes, etag: p.etag })),
    missing_part_numbers: missing,
  };
}
