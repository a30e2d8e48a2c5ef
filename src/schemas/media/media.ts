import { z } from "@hono/zod-openapi";
import type { MediaUpload } from "../../db/schema";
import { AGENCY_ROLES, PLATFORM_ROLES } from "../../domain/roles";
import { ASSET_POLICIES, ASSET_TYPES, MULTIPART_THRESHOLD_BYTES, partPlan } from "../../media/policy";
import { uploadTarget } from "../../media/presign";

/** Everyone in the agency may upload but a viewer; keys minted by platform staff act like the agency's own. */
export const UPLOADER_ROLES = [...AGENCY_ROLES.filter((r) => r !== "viewer"), ...PLATFORM_ROLES] as const;

const policyTable = Object.entries(ASSET_POLICIES)
  .map(([type, p]) => `\`${type}\`: ${p.contentTypes.map((t) => `\`${t}\``).join(", ")}, at most ${p.maxBytes} bytes`)
  .join("; ");

export const UploadRequestSchema = z
  .strictObject({
    asset_type: z.enum(ASSET_TYPES).openapi({
      description: `What the file is. Accepted types and caps per asset type: ${policyTable}.`,
      example: "photo",
    }),
    content_type: z.string().min(1).max(127).openapi({
      description: "The file's media type, checked against the asset type's allowlist (case and parameters ignored).",
      example: "image/jpeg",
    }),
    size_bytes: z
      .number()
      .int()
      .min(1)
      .max(Number.MAX_SAFE_INTEGER)
      .openapi({
        description:
          "The file's exact size in bytes, checked against the asset type's cap (above it, 422 `file_too_large`). " +
          `Up to ${MULTIPART_THRESHOLD_BYTES} bytes (100 MiB) the file goes in one PUT; above, it goes up in ` +
          "parts (see `multipart` in the answer). The upload must carry exactly this many bytes.",
        example: 4_718_592,
      }),
    listing_number: z
      .string()
      .regex(/^[a-z0-9]{7}$/, "7 lowercase letters or digits")
      .optional()
      .openapi({
        description:
          "The listing the file belongs to (one of yours). Files of a listing are delivered to its agent's cloud " +
          "storage once its uploads complete.",
        example: "k3v9x2a",
      }),
    filename: z
      .string()
      .min(1)
      .max(200)
      // biome-ignore lint/suspicious/noControlCharactersInRegex: a file name must not hold control characters.
      .regex(/^[^/\\\x00-\x1f\x7f]+$/, "a file name without slashes, backslashes or control characters")
      .refine((n) => n !== "." && n !== "..", "must name a file")
      .optional()
      .openapi({
        description:
          "The file's name, kept for delivery (no slashes or control characters). A later upload of the same " +
          "name to the same listing replaces it at the destination.",
        example: "front-elevation.jpg",
      }),
  })
  .openapi("MediaUploadRequest");

const MultipartPlanSchema = z
  .object({
    part_size_bytes: z
      .number()
      .int()
      .openapi({
        description:
          "The size of every part but the last, in bytes: parts are equal, as the storage requires. Part n covers " +
          "bytes (n-1)×part_size_bytes up to the next part.",
        example: 67_108_864,
      }),
    part_count: z.number().int().openapi({ description: "How many parts the file is cut into.", example: 96 }),
    last_part_bytes: z
      .number()
      .int()
      .openapi({ description: "The size of the last part: the remainder.", example: 67_108_864 }),
  })
  .openapi("MediaUploadMultipart", {
    description:
      "Sign part URLs with `GET /api/v1/media/uploads/{upload_id}/part-urls`, PUT each part to its URL, list what is " +
      "stored with `GET /api/v1/media/uploads/{upload_id}/parts` to resume, then `POST …/complete` with every part's " +
      "number and ETag (or `POST …/abort`).",
  });

export const UploadTargetSchema = z
  .object({
    upload_id: z.string().openapi({ description: "The upload's id.", example: "upl_0mhx3k2a1q8v2l0c9z7rj4" }),
    status: z
      .enum(["pending", "completed", "expired", "aborted"])
      .openapi({ description: "`pending` until the file's bytes arrive.", example: "pending" }),
    method: z.literal("PUT").openapi({ description: "The HTTP method of the upload (and of each part)." }),
    url: z
      .string()
      .nullable()
      .openapi({
        description:
          "Where to PUT the file's bytes: a pre-signed URL (SigV4 query signature on the storage's S3 endpoint, " +
          "or the service's own signed upload path). It authorizes exactly one file of this type and size; send " +
          "no API key with it. Null for a file that goes up in parts: see `multipart`.",
        example:
          "https://0123456789abcdef.r2.cloudflarestorage.com/alms-uploads-live/agy_…/k3v9x2a/upl_…/" +
          "front-elevation.jpg?X-Amz-Algorithm=AWS4-HMAC-SHA256&…",
      }),
    headers: z
      .object({
        "Content-Type": z.string().openapi({ example: "image/jpeg" }),
        "Content-Length": z.string().openapi({ example: "4718592" }),
        "If-None-Match": z
          .literal("*")
          .optional()
          .openapi({
            description:
              "Sent with direct storage URLs: the storage writes the file only if none is stored yet, so the URL " +
              "stores one file and a second PUT is refused instead of replacing it.",
            example: "*",
          }),
      })
      .nullable()
      .openapi({
        description:
          "Headers the PUT must carry with exactly these values; the signature covers them. Null for a file that " +
          "goes up in parts.",
      }),
    multipart: MultipartPlanSchema.nullable().openapi({
      description:
        `How the file goes up in parts when it is larger than ${MULTIPART_THRESHOLD_BYTES} bytes; ` +
        "null when it goes in one PUT.",
    }),
    expires_at: z.string().openapi({
      description:
        "When the URL stops working (for a file in parts: when the upload stops accepting parts and completion). " +
        "ISO 8601 UTC.",
      example: "2026-11-22T15:45:00.000Z",
    }),
    expires_in: z.number().int().openapi({ description: "Seconds from now until `expires_at`.", example: 900 }),
    asset_type: z.enum(ASSET_TYPES).openapi({ description: "What the file is, as requested.", example: "photo" }),
    content_type: z.string().openapi({ description: "The normalized media type.", example: "image/jpeg" }),
    size_bytes: z
      .number()
      .int()
      .openapi({ description: "The exact size in bytes the upload must carry.", example: 4_718_592 }),
    listing_number: z.string().nullable().openapi({ example: "k3v9x2a" }),
    filename: z.string().nullable().openapi({ example: "front-elevation.jpg" }),
  })
  .openapi("MediaUploadTarget");

export type UploadTargetBody = z.infer<typeof UploadTargetSchema>;

/** An upload as its destination: a fresh signature for the same file, until the upload expires. */
export async function presentUpload(
  env: Env,
  origin: string,
  upload: MediaUpload,
  listingNumber: string | null,
): Promise<UploadTargetBody> {
  const expiresAt = new Date(upload.expiresAt);
  const target = upload.multipartId ? null : await uploadTarget(env, origin, upload, expiresAt);
  const plan = upload.multipartId ? partPlan(upload.sizeBytes) : null;
  return UploadTargetSchema.parse({
    upload_id: upload.id,
    status: upload.status,
    method: "PUT",
    url: target?.url ?? null,
    headers: target?.headers ?? null,
    multipart: plan && {
      part_size_bytes: plan.partSize,
      part_count: plan.partCount,
      last_part_bytes: plan.lastPartSize,
    },
    expires_at: (target?.expiresAt ?? expiresAt).toISOString(),
    expires_in: Math.max(0, Math.round(((target?.expiresAt ?? expiresAt).getTime() - Date.now()) / 1000)),
    asset_type: upload.assetType,
    content_type: upload.contentType,
    size_bytes: upload.sizeBytes,
    listing_number: listingNumber,
    filename: upload.filename,
  });
}
