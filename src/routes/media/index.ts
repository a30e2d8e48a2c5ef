import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import type { Replayer } from "../../http/registry";
import { validationHook } from "../../http/validation";
import { listingOf, uploadOfAgency } from "../../media/uploads";
import { presentUpload } from "../../schemas/media";
import { getUploadHandler, getUploadRoute } from "./get-upload";
import { listListingMediaHandler, listListingMediaRoute } from "./list-listing-media";
import { LOCAL_UPLOAD_PATH, localUploadApp } from "./local-upload";
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
  .openapi(listListingMediaRoute, listListingMediaHandler);

/** The signed upload path is a URL the service hands out, not an operation: it stays out of the OpenAPI document. */
export const uploadPath = { app: localUploadApp, paths: [["put", LOCAL_UPLOAD_PATH]] } as const;
