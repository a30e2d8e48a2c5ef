import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { multipartOf, stillOpen, storedParts } from "../../media/uploads/multipart";
import { uploadOfAgency } from "../../media/uploads/records";
import { UPLOADER_ROLES } from "../../schemas/media/media";
import { presentStoredParts, StoredPartsSchema } from "../../schemas/media/multipart";
import { uploadIdParam } from "../../schemas/media/uploads";

export const listPartsRoute = publicRoute(
  {
    endpoint: "read_upload_parts",
    scope: "media:write",
    roles: UPLOADER_ROLES,
    errors: ["upload_not_found", "upload_not_multipart", "upload_already_completed", "upload_closed"],
  },
  {
    method: "get",
    path: "/api/v1/media/uploads/{upload_id}/parts",
    operationId: "listMediaUploadParts",
    tags: ["Media"],
    summary: "List the stored parts of a multipart upload",
    description: [
      "The parts of a file in parts that are stored so far, each with its size and ETag, and the part numbers " +
        "still missing. After an interruption, send only the missing parts (sign their URLs again), then " +
        "complete with every part.",
      "",
      "Needs the `media:write` scope; another agency's upload is 404 `upload_not_found`. A file sent in one PUT " +
        "has no parts: 409 `upload_not_multipart`. Once the upload completed its parts are one file (409 " +
        "`upload_already_completed`); an aborted or expired upload has none (409 `upload_closed`).",
    ].join("\n"),
    request: { params: uploadIdParam },
    responses: { 200: { description: "The stored parts.", content: json(StoredPartsSchema) } },
  },
);

export const listPartsHandler: RouteHandler<typeof listPartsRoute, AppEnv> = async (c) => {
  const upload = await uploadOfAgency(c.var.db, c.get("caller").agencyId, c.req.valid("param").upload_id);
  if (!upload) throw new DomainError("upload_not_found");
  const m = multipartOf(upload);
  stillOpen(upload);
  return c.json(StoredPartsSchema.parse(presentStoredParts(m, await storedParts(c.var.db, c.env, m))), 200);
};
