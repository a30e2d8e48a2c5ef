import { DomainError } from "../lib/errors";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;

/**
 * The largest object R2 accepts in one PUT: 5 GiB less 5 MiB (5,363,466,240 bytes). S3's
 * own single-PUT limit is a round 5 GiB, but R2 refuses a PUT above this, so a file
 * between the two would get an upload URL that can never succeed.
 */
export const R2_SINGLE_PUT_MAX_BYTES = 5 * GiB - 5 * MiB;

/**
 * What each asset type accepts. Types are compared lowercased and without parameters.
 * Every file arrives in one PUT, so no cap is above R2's single-PUT limit; SVG is refused
 * for floorplans because it can carry script.
 */
export const ASSET_POLICIES = {
  photo: { contentTypes: ["image/jpeg", "image/png", "image/webp", "image/heic"], maxBytes: 50 * MiB },
  video: { contentTypes: ["video/mp4", "video/quicktime", "video/webm"], maxBytes: R2_SINGLE_PUT_MAX_BYTES },
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
