import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { completeMultipart, multipartOf } from "../../media/uploads/multipart";
import { uploadOfAgency } from "../../media/uploads/records";
import { findUploadView } from "../../media/uploads/views";
import { UPLOADER_ROLES } from "../../schemas/media/media";
import { CompleteUploadSchema } from "../../schemas/media/multipart";
import { presentUploadStatus, UploadStatusSchema, uploadIdParam } from "../../schemas/media/uploads";

export const completeUploadRoute = publicRoute(
  {
    endpoint: "complete_upload",
    scope: "media:write",
    roles: UPLOADER_ROLES,
    bodyLimit: 256 * 1024,
    errors: [
      "upload_not_found",
      "upload_not_multipart",
      "upload_part_out_of_range",
      "upload_parts_incomplete",
      "upload_closed",
      "upload_size_mismatch",
      "queue_unavailable",
    ],
  },
  {
    method: "post",
    path: "/api/v1/media/uploads/{upload_id}/complete",
    operationId: "completeMediaUpload",
    tags: ["Media"],
    summary: "Complete a multipart upload",
    description: [
      "Joins the parts of a file in parts into the file. `parts` names every part, 1 to `part_count`, with the " +
        "ETag its PUT answered (or `GET …/parts` lists); a part missing or named with another ETag is 409 " +
        "`upload_parts_incomplete` (`details` names them), and nothing changes: send the missing parts and " +
        "complete again. The file then completes exactly as a file sent in one PUT does: when it was the last " +
        "pending upload of its listing, the listing's new files are delivered, reported by " +
        "`media.delivery.completed` or `media.delivery.failed`, once.",
      "",
      "Completing a completed upload changes nothing and answers it again; an aborted or expired one is 409 " +
        "`upload_closed`. 503 `queue_unavailable` leaves the joined file in place: complete again.",
    ].join("\n"),
    request: { params: uploadIdParam, body: { content: json(CompleteUploadSchema) } },
    responses: { 200: { description: "The completed upload.", content: json(UploadStatusSchema) } },
  },
);

export const completeUploadHandler: RouteHandler<typeof completeUploadRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const agencyId = c.get("caller").agencyId;
  const upload = await uploadOfAgency(db, agencyId, c.req.valid("param").upload_id);
  if (!upload) throw new DomainError("upload_not_found");
  await completeMultipart(db, c.env, multipartOf(upload), c.req.valid("json").parts);
  return c.json(UploadStatusSchema.parse(presentUploadStatus(await findUploadView(db, agencyId, upload.id))), 200);
};
