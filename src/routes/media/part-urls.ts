import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { checkPartNumbers, multipartOf, stillOpen } from "../../media/uploads/multipart";
import { partTargets } from "../../media/uploads/part-urls";
import { uploadOfAgency } from "../../media/uploads/records";
import { UPLOADER_ROLES } from "../../schemas/media/media";
import { PartUrlsSchema, partNumbersOf, partUrlsQuery, presentPartUrls } from "../../schemas/media/multipart";
import { uploadIdParam } from "../../schemas/media/uploads";

export const partUrlsRoute = publicRoute(
  {
    endpoint: "sign_upload_parts",
    scope: "media:write",
    roles: UPLOADER_ROLES,
    errors: [
      "upload_not_found",
      "upload_not_multipart",
      "upload_part_out_of_range",
      "upload_already_completed",
      "upload_closed",
    ],
  },
  {
    method: "get",
    path: "/api/v1/media/uploads/{upload_id}/part-urls",
    operationId: "signMediaUploadParts",
    tags: ["Media"],
    summary: "Sign URLs for parts of a multipart upload",
    description: [
      "For a file that goes up in parts (the upload answered `multipart`): one pre-signed URL per part asked for, " +
        "each valid for 15 minutes (never past the upload's `expires_at`). PUT each part to its URL with exactly " +
        "the `headers` given and no API key; the URL accepts exactly that part's size and the upload's type. " +
        "Sign more parts whenever you need them, and sign a part again when its URL lapsed.",
      "",
      "On the service's own part path, a part is stored once: a second PUT of a stored part (or of one being " +
        "received) is 409 `upload_part_already_stored`, another size 400 `upload_size_mismatch`, another type " +
        "415 `request_content_type_mismatch`. A direct storage URL is bound to the part's size and type, and " +
        "completion takes each part with the ETag you name.",
      "",
      "Needs the `media:write` scope; another agency's upload is 404 `upload_not_found`.",
    ].join("\n"),
    request: { params: uploadIdParam, query: partUrlsQuery },
    responses: { 200: { description: "The signed part URLs.", content: json(PartUrlsSchema) } },
  },
);

export const partUrlsHandler: RouteHandler<typeof partUrlsRoute, AppEnv> = async (c) => {
  const upload = await uploadOfAgency(c.var.db, c.get("caller").agencyId, c.req.valid("param").upload_id);
  if (!upload) throw new DomainError("upload_not_found");
  const m = multipartOf(upload);
  stillOpen(upload);
  const numbers = partNumbersOf(c.req.valid("query").part_numbers);
  checkPartNumbers(m.plan, numbers);
  const targets = await partTargets(c.env, new URL(c.req.url).origin, m.upload, m.plan, numbers);
  return c.json(PartUrlsSchema.parse(presentPartUrls(m, targets)), 200);
};
