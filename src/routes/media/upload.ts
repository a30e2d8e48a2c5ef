import type { RouteHandler } from "@hono/zod-openapi";
import { findListing } from "../../domain/listings/reads";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { created, json, publicRoute, setLocation } from "../../http/route";
import { checkUpload } from "../../media/policy";
import { createUpload } from "../../media/uploads/records";
import { presentUpload, UPLOADER_ROLES, UploadRequestSchema, UploadTargetSchema } from "../../schemas/media/media";

export const uploadMediaRoute = publicRoute(
  {
    endpoint: "upload_media",
    scope: "media:write",
    roles: UPLOADER_ROLES,
    session: true,
    errors: [
      "unsupported_mime_type",
      "file_too_large",
      "listing_not_found",
      "queue_unavailable",
      "agency_quota_exceeded",
    ],
  },
  {
    method: "post",
    path: "/api/v1/media/upload",
    operationId: "uploadMedia",
    tags: ["Media"],
    summary: "Request a pre-signed upload destination",
    description: [
      "Announces one file and answers where to send its bytes: PUT the file to `url` with exactly the `headers` " +
        "given, before `expires_at` (15 minutes). No API key goes with the PUT; the URL's signature authorizes " +
        "exactly this file, so a PUT of another type or size is refused (by the storage, or, on the service's own " +
        "upload path, with 415 `request_content_type_mismatch` or 400 `upload_size_mismatch`).",
      "",
      "An upload URL stores exactly one file. On the service's own upload path, of two PUTs at once exactly one " +
        "stores its file and the other is 409 `upload_already_completed`, as is any PUT after the file arrived; a " +
        "refused or failed PUT stores nothing and may be retried until `expires_at`. A direct storage URL carries " +
        "`If-None-Match: *` among its signed headers, so the storage refuses a second object; the upload " +
        "completes with the first file of the declared size, and only that file is ever delivered.",
      "",

      "Authentication: `X-API-Key`, or the dashboard session cookie. When both are sent, the cookie wins; when " +
        "neither is, 401 `auth_required`. A viewer is refused (403 `role_forbidden`).",
      "",

      "With `listing_number`, the file belongs to that listing. When the last of a listing's pending uploads " +
        "completes, its new files are copied to the cloud storage of the listing's agent (the first agent, else " +
        "the second, when one of them has storage configured in the dashboard), reported by " +
        "`media.delivery.completed` (also when some files failed; see `summary`) or `media.delivery.failed` " +
        "(nothing arrived after all retries).",
      "",
      "503 `queue_unavailable` (with `Retry-After`) means nothing was recorded; retry with the same idempotency key.",
    ].join("\n"),
    request: { body: { content: json(UploadRequestSchema) } },
    responses: created(
      "The upload destination.",
      UploadTargetSchema,
      "/api/v1/media/uploads/upl_0mhx3k2a1q8v2l0c9z7rj4",
    ),
  },
);

export const uploadMediaHandler: RouteHandler<typeof uploadMediaRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const caller = c.get("caller");
  const contentType = checkUpload(b.asset_type, b.content_type, b.size_bytes);
  const db = c.var.db;
  const listing = b.listing_number ? await findListing(db, caller.agencyId, b.listing_number) : null;
  const upload = await createUpload(
    db,
    c.env,
    {
      agencyId: caller.agencyId,
      listing,
      assetType: b.asset_type,
      contentType,
      sizeBytes: b.size_bytes,
      filename: b.filename ?? null,
      userId: caller.userId,
    },
    (id) => idempotencyMark(c, db, { status: 201, resourceType: "media_upload", resourceId: id }),
  );
  setLocation(c, `/api/v1/media/uploads/${upload.id}`);
  return c.json(await presentUpload(c.env, new URL(c.req.url).origin, upload, listing?.listingNumber ?? null), 201);
};
