import { z } from "@hono/zod-openapi";
import type { DeliveryDestination, MediaUpload } from "../../db/schema";
import type { DeliveryWithFiles } from "../../media/delivery/records";

export const userParams = z.object({ user_id: z.string() });
export const destinationPath = "/internal/v1/users/{user_id}/delivery-destination";

export const DestinationSchema = z
  .object({
    user_id: z.string(),
    provider: z.literal("s3"),
    endpoint_url: z.string().openapi({ example: "https://s3.eu-west-1.amazonaws.com" }),
    bucket: z.string(),
    region: z.string(),
    addressing_style: z.enum(["path", "virtual"]),
    access_key_id: z.string(),
    path_prefix: z.string(),
    updated_at: z.string(),
  })
  .openapi("DeliveryDestination", {
    description: "An agent's S3-compatible storage. The secret access key is stored encrypted and never answered.",
  });

export const presentDestination = (d: DeliveryDestination) => ({
  user_id: d.userId,
  provider: d.provider,
  endpoint_url: d.endpointUrl,
  bucket: d.bucket,
  region: d.region,
  addressing_style: d.addressingStyle,
  access_key_id: d.accessKeyId,
  path_prefix: d.pathPrefix,
  updated_at: d.updatedAt,
});

export const UploadSchema = z
  .object({
    id: z.string(),
    status: z.enum(["pending", "completed", "expired", "aborted"]),
    asset_type: z.string(),
    content_type: z.string(),
    size_bytes: z.number().int(),
    filename: z.string().nullable(),
    created_by_user_id: z.string(),
    expires_at: z.string(),
    completed_at: z.string().nullable(),
    created_at: z.string(),
  })
  .openapi("InternalMediaUpload");

export const presentUpload = (u: MediaUpload) => ({
  id: u.id,
  status: u.status,
  asset_type: u.assetType,
  content_type: u.contentType,
  size_bytes: u.sizeBytes,
  filename: u.filename,
  created_by_user_id: u.createdByUserId,
  expires_at: u.expiresAt,
  completed_at: u.completedAt,
  created_at: u.createdAt,
});

export const DeliverySchema = z
  .object({
    id: z.string(),
    status: z.enum(["queued", "delivering", "completed", "failed"]),
    trigger: z.enum(["upload", "manual"]),
    destination_user_id: z.string(),
    attempts: z.number().int(),
    files_total: z.number().int(),
    files_delivered: z.number().int(),
    files_failed: z.number().int(),
    error: z.string().nullable(),
    files: z.array(
      z.object({
        upload_id: z.string(),
        status: z.enum(["pending", "delivered", "failed"]),
        error: z.string().nullable(),
      }),
    ),
    created_at: z.string(),
    finished_at: z.string().nullable(),
  })
  .openapi("MediaDelivery");

export const presentDelivery = (d: DeliveryWithFiles) => ({
  id: d.id,
  status: d.status,
  trigger: d.trigger,
  destination_user_id: d.destinationUserId,
  attempts: d.attempts,
  files_total: d.filesTotal,
  files_delivered: d.filesDelivered,
  files_failed: d.filesFailed,
  error: d.error,
  files: d.files.map((f) => ({ upload_id: f.uploadId, status: f.status, error: f.error })),
  created_at: d.createdAt,
  finished_at: d.finishedAt,
});
