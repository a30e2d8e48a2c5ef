import { z } from "@hono/zod-openapi";
import { ASSET_TYPES } from "../../media/policy";
import type { LatestDelivery, UploadView } from "../../media/uploads/views";

/** Where an upload stands, in one word: see `UploadStatusSchema`'s description. */
const UPLOAD_STAGES = ["pending", "uploading", "stored", "delivered", "failed"] as const;
type UploadStage = (typeof UPLOAD_STAGES)[number];

export const uploadIdParam = z.object({
  upload_id: z
    .string()
    .openapi({ description: "The upload's id, as `POST /api/v1/media/upload` answered it.", example: "upl_0mhx3k2a" }),
});

const EXPIRED_ERROR = "the file did not arrive before its upload URL expired, or arrived with another size";
const ABORTED_ERROR = "the upload was aborted";

const UploadDeliverySchema = z
  .object({
    delivery_id: z.string().openapi({ description: "The delivery's id.", example: "dlv_0mhx3k2a1q8v2l0c9z7rj4" }),
    status: z.enum(["queued", "delivering", "completed", "failed"]).openapi({
      description:
        "The delivery as a whole: `queued`, `delivering`, or final (`completed` when at least one of its files " +
        "arrived, else `failed`), as `media.delivery.completed` / `media.delivery.failed` report it.",
      example: "completed",
    }),
    file_status: z.enum(["pending", "delivered", "failed"]).openapi({
      description:
        "This file in that delivery. `failed` while the delivery is not final is retried (only missing files are " +
        "sent again).",
      example: "delivered",
    }),
    error: z.string().nullable().openapi({
      description: "Why this file was not delivered (the storage's own error code when it said), else null.",
      example: null,
    }),
  })
  .openapi("MediaUploadDelivery", {
    description: "The latest copy of the file to the listing agent's cloud storage.",
  });

export const UploadStatusSchema = z
  .object({
    upload_id: z.string().openapi({ description: "The upload's id.", example: "upl_0mhx3k2a1q8v2l0c9z7rj4" }),
    status: z.enum(UPLOAD_STAGES).openapi({
      description:
        "Where the file stands. `pending`: announced, its bytes have not arrived (the URL is valid until " +
        "`expires_at`). `stored`: the bytes are in the service's storage, not (yet) sent to the agent's cloud " +
        "storage: the listing's other uploads are still pending, its agents have no storage configured, or " +
        "the upload has no listing. `uploading`: being copied to the agent's cloud storage (a delivery is " +
        "queued or running). `delivered`: the latest delivery put the file in the agent's storage. `failed`: " +
        "the bytes never arrived before the URL expired (or arrived with another size), the upload in parts was " +
        "aborted, or the latest " +
        "delivery ended without this file; `error` says which.",
      example: "delivered",
    }),
    asset_type: z.enum(ASSET_TYPES).openapi({ description: "What the file is.", example: "photo" }),
    content_type: z.string().openapi({ description: "The normalized media type.", example: "image/jpeg" }),
    size_bytes: z
      .number()
      .int()
      .openapi({ description: "The size declared when the upload was requested.", example: 4_718_592 }),
    stored_bytes: z
      .number()
      .int()
      .nullable()
      .openapi({
        description:
          "Bytes stored for this upload: the declared size once the file arrived (an upload completes only with " +
          "exactly that many bytes), null before or when it never did.",
        example: 4_718_592,
      }),
    filename: z
      .string()
      .nullable()
      .openapi({ description: "The file's name, if one was given.", example: "front-elevation.jpg" }),
    listing_number: z
      .string()
      .nullable()
      .openapi({ description: "The listing the file belongs to, if any.", example: "k3v9x2a" }),
    error: z.string().nullable().openapi({
      description: "Why the upload is `failed`, else null.",
      example: null,
    }),
    delivery: UploadDeliverySchema.nullable().openapi({
      description: "The latest delivery that carried the file; null when none has yet.",
    }),
    expires_at: z.string().openapi({
      description: "When the upload URL stopped (or stops) accepting the file. ISO 8601 UTC.",
      example: "2026-11-22T15:45:00.000Z",
    }),
    completed_at: z.string().nullable().openapi({
      description: "When the file's bytes arrived, else null. ISO 8601 UTC.",
      example: "2026-11-22T15:31:12.000Z",
    }),
    created_at: z
      .string()
      .openapi({ description: "When the upload was requested. ISO 8601 UTC.", example: "2026-11-22T15:30:00.000Z" }),
    updated_at: z.string().openapi({
      description: "The last change to the upload or to its latest delivery of it. ISO 8601 UTC.",
      example: "2026-11-22T15:33:40.000Z",
    }),
  })
  .openapi("MediaUploadStatus");

function stageOf(status: UploadView["upload"]["status"], delivery: LatestDelivery | null): UploadStage {
  if (status === "pending") return "pending";
  if (status === "expired" || status === "aborted") return "failed";
  if (!delivery) return "stored";
  if (delivery.fileStatus === "delivered") return "delivered";
  if (delivery.deliveryStatus === "queued" || delivery.deliveryStatus === "delivering") return "uploading";
  return "failed";
}

/** An upload as its owner reads it: one word for where it stands, with the detail behind it. */
export function presentUploadStatus({ upload, listingNumber, delivery }: UploadView) {
  const status = stageOf(upload.status, delivery);
  const error =
    status !== "failed"
      ? null
      : upload.status === "expired"
        ? EXPIRED_ERROR
        : upload.status === "aborted"
          ? ABORTED_ERROR
          : (delivery?.error ?? "not delivered");
  const updatedAt = delivery && delivery.updatedAt > upload.updatedAt ? delivery.updatedAt : upload.updatedAt;
  return {
    upload_id: upload.id,
    status,
    asset_type: upload.assetType,
    content_type: upload.contentType,
    size_bytes: upload.sizeBytes,
    stored_bytes: upload.status === "completed" ? upload.sizeBytes : null,
    filename: upload.filename,
    listing_number: listingNumber,
    error,
    delivery: delivery && {
      delivery_id: delivery.deliveryId,
      status: delivery.deliveryStatus,
      file_status: delivery.fileStatus,
      error: delivery.error,
    },
    expires_at: upload.expiresAt,
    completed_at: upload.completedAt,
    created_at: upload.createdAt,
    updated_at: updatedAt,
  };
}
