import { OpenAPIHono } from "@hono/zod-openapi";
import { Hono } from "hono";
import type { AppEnv } from "../../http/env";
import type { Replayer } from "../../http/registry";
import { validationHook } from "../../http/validation";
import { listingOf, uploadOfAgency } from "../../media/uploads/records";
import { presentUpload } from "../../schemas/media/media";
import { abortUploadHandler, abortUploadRoute } from "./abort";
import { completeUploadHandler, completeUploadRoute } from "./complete";
import { getUploadHandler, getUploadRoute } from "./get-upload";
import { listListingMediaHandler, listListingMediaRoute } from "./list-listing-media";
import { listPartsHandler, listPartsRoute } from "./list-parts";
import { LOCAL_PART_PATH, localPartApp } from "./local-part";
import { LOCAL_UPLOAD_PATH, localUploadApp } from "./local-upload";
import { partUrlsHandler, partUrlsRoute } from "./part-urls";
import { uploadMediaHandler, uploadMediaRoute } from "./upload";

/** An upload request whose response was lost is answered with a fresh signature for the same upload. */
export const replayUpload: Replayer = async ({ db, env, agencyId, origin }, id) => {
  const upload = await uploadOfAgency(db, agencyId, id);
  if (!upload) return undefined;
  const listing = await listingOf(db, upload);
  return presentUpload(env, origin, upload, listing?.listingNumber ?? null);
};

export const mediaApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(uploadMediaRoute, uploadMediaHandler)
  .openapi(getUploadRoute, getUploadHandler)
  .openapi(listListingMediaRoute, listListingMediaHandler)
  .openapi(partUrlsRoute, partUrlsHandler)
  .openapi(listPartsRoute, listPartsHandler)
  .openapi(completeUploadRoute, completeUploadHandler)
  .openapi(abortUploadRoute, abortUploadHandler);

/** The signed upload paths are URLs the service hands out, not operations: they stay out of the OpenAPI document. */
export const uploadPath = {
  app: new Hono<AppEnv>().route("/", localUploadApp).route("/", localPartApp),
  paths: [
    ["put", LOCAL_UPLOAD_PATH],
    ["put", LOCAL_PART_PATH],
  ],
} as const;
