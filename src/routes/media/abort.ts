import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { abortMultipart, multipartOf } from "../../media/uploads/multipart";
import { uploadOfAgency } from "../../media/uploads/records";
import { findUploadView } from "../../media/uploads/views";
import { UPLOADER_ROLES } from "../../schemas/media/media";
import { AbortUploadSchema } from "../../schemas/media/multipart";
import { presentUploadStatus, UploadStatusSchema, uploadIdParam } from "../../schemas/media/uploads";

export const abortUploadRoute = publicRoute(
  {
    endpoint: "abort_upload",
    scope: "media:write",
    roles: UPLOADER_ROLES,
    errors: ["upload_not_found", "upload_not_multipart", "upload_already_completed", "queue_unavailable"],
  },
  {
    method: "post",
    path: "/api/v1/media/uploads/{upload_id}/abort",
    operationId: "abortMediaUpload",
    tags: ["Media"],
    summary: "Abort a multipart upload",
    description: [
      'Gives up a file in parts: its stored parts are dropped and the upload ends `failed` (error "the upload ' +
        "was aborted\"); its listing's delivery no longer waits for it. Send an empty JSON object. Aborting an " +
        "aborted or expired upload changes nothing and answers it again; a completed one is 409 " +
        "`upload_already_completed`. An upload in parts that is neither completed nor aborted is dropped the " +
        "same way when its `expires_at` passes.",
    ].join("\n"),
    request: { params: uploadIdParam, body: { content: json(AbortUploadSchema) } },
    responses: { 200: { description: "The aborted upload.", content: json(UploadStatusSchema) } },
  },
);

export const abortUploadHandler: RouteHandler<typeof abortUploadRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const agencyId = c.get("caller").agencyId;
  const upload = await uploadOfAgency(db, agencyId, c.req.valid("param").upload_id);
  if (!upload) throw new DomainError("upload_not_found");
  await abortMultipart(db, c.env, multipartOf(upload));
  return c.json(UploadStatusSchema.parse(presentUploadStatus(await findUploadView(db, agencyId, upload.id))), 200);
};
