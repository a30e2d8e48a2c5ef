import { DomainError } from "../lib/errors";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * The largest object R2 accepts in one PUT: 5 GiB less 5 MiB (5,363,466,240 bytes). S3's
 * own single-PUT limit is a round 5 GiB, but R2 refuses a PUT above this, so a file
 * between the two would get an upload URL that can never succeed.
 */
export const R2_SINGLE_PUT_MAX_BYTES = 5 * GiB - 5 * MiB;

/** Above this size a file goes up in parts (a multipart upload), which a dropped connection does not undo. */
export const MULTIPART_THRESHOLD_BYTES = 100 * MiB;

/**
 * Every part but the last has this size at least: under the 100 MB request body limit of
 * the Free and Pro plans, so a part also fits through the service's own upload path.
 */
const MIN_PART_BYTES = 64 * MiB;

/** At most this many parts (R2 allows 10,000): the completion's part list stays a small body. */
export const MAX_PARTS = 1000;

/**
 * What each asset type accepts. Types are compared lowercased and without parameters.
 * A file above `MULTIPART_THRESHOLD_BYTES` goes up in parts, so the video cap is what a
 * day's shoot needs, not R2's single-PUT limit; SVG is refused for floorplans because it
 * can carry script.
 */
export const ASSET_POLICIES = {
  photo: { contentTypes: ["image/jpeg", "image/png", "image/webp", "image/heic"], maxBytes: 50 * MiB },
  video: { contentTypes: ["video/mp4", "video/quicktime", "video/webm"], maxBytes: 50 * GiB },
  floorplan: { contentTypes: ["image/jpeg", "image/png", "application/pdf"], maxBytes: 25 * MiB },
  document: { contentTypes: ["application/pdf"], maxBytes: 50 * MiB },
} as const satisfies Record<string, { contentTypes: readonly string[]; maxBytes: number }>;

export type AssetType = keyof typeof ASSET_POLICIES;
export const ASSET_TYPES = Object.keys(ASSET_POLICIES) as AssetType[];

/** `Image/JPEG; charset=x` and `image/jpeg` name the same type. */
export const normalizeContentType = (contentType: string) => contentType.split(";")[0]!.trim().toLowerCase();

/** Checks a declared file against its asset type; answers the normalized content type. */
export function checkUpload(assetType: AssetType, contentType: string, sizeBytes: number): string {
  const policy = ASSET_POLICIES[assetType];
  const normalized = normalizeContentType(contentType);
  if (!(policy.contentTypes as readonly string[]).includes(normalized)) {
    throw new DomainError("unsupported_mime_type", {
      message:
        `'${contentType}' is not accepted for asset_type '${assetType}'. ` +
        `Accepted: ${policy.contentTypes.join(", ")}.`,
      details: { asset_type: assetType, content_type: contentType, allowed_content_types: policy.contentTypes },
    });
  }
  if (sizeBytes > policy.maxBytes) {
    throw new DomainError("file_too_large", {
      message: `size_bytes ${sizeBytes} is above the ${assetType} cap of ${policy.maxBytes} bytes.`,
      details: { asset_type: assetType, size_bytes: sizeBytes, max_bytes: policy.maxBytes },
    });
  }
  return normalized;
}

const EXTENSIONS: Record<string, string> = {
  "image/jpeg": "jpg",
  "image/png": "png",
  "image/webp": "webp",
  "image/heic": "heic",
  "video/mp4": "mp4",
  "video/quicktime": "mov",
  "video/webm": "webm",
  "application/pdf": "pdf",
};

/** The name a file is stored and delivered under: the client's filename, or the upload id with the type's extension. */
export const fileNameOf = (upload: { id: string; filename: string | null; contentType: string }) =>
  upload.filename ??
  `${upload.id}.${Object.hasOwn(EXTENSIONS, upload.contentType) ? EXTENSIONS[upload.contentType] : "bin"}`;

/** How a file is cut into parts: equal parts, as R2 requires, but the last, which holds the remainder. */
export interface PartPlan {
  partSize: number;
  partCount: number;
  lastPartSize: number;
}

/** Whole MiB, at least `MIN_PART_BYTES`, and large enough that the file needs at most `MAX_PARTS` parts. */
export function partPlan(sizeBytes: number): PartPlan {
  const partSize = Math.max(MIN_PART_BYTES, Math.ceil(sizeBytes / MAX_PARTS / MiB) * MiB);
  const partCount = Math.ceil(sizeBytes / partSize);
  return { partSize, partCount, lastPartSize: sizeBytes - (partCount - 1) * partSize };
}

/** The exact size of part `n` (1-based) of a file cut by `plan`. */
export const partSizeOf = (plan: PartPlan, n: number) => (n === plan.partCount ? plan.lastPartSize : plan.partSize);
