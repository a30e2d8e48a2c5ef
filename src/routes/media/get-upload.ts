import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { findUploadView } from "../../media/uploads/views";
import { presentUploadStatus, UploadStatusSchema, uploadIdParam } from "../../schemas/media/uploads";

export const getUploadRoute = publicRoute(
  { endpoint: "read_media_single", scope: "listings:read", errors: ["upload_not_found"] },
  {
    method: "get",
    path: "/api/v1/media/uploads/{upload_id}",
    operationId: "getMediaUpload",
    tags: ["Media"],
    summary: "Get an upload's status",
    description: [
      "Where one file stands: `pending` (its bytes have not arrived), `stored` (in the service's storage), " +
        "`uploading` (being copied to the listing agent's cloud storage), `delivered`, or `failed` (with " +
        "`error`), with its declared and stored sizes and the latest delivery that carried it.",
      "",
      "Reading media needs the `listings:read` scope: media belongs to a listing. Another agency's upload " +
        "answers 404 `upload_not_found`, exactly like an unknown id.",
    ].join("\n"),
    request: { params: uploadIdParam },
    responses: { 200: { description: "The upload.", content: json(UploadStatusSchema) } },
  },
);

export const getUploadHandler: RouteHandler<typeof getUploadRoute, AppEnv> = async (c) => {
  const view = await findUploadView(c.var.db, c.get("caller").agencyId, c.req.valid("param").upload_id);
  return c.json(UploadStatusSchema.parse(presentUploadStatus(view)), 200);
};
