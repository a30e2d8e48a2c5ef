import { OpenAPIHono } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import type { AppEnv } from "../../env";
import { listings, mediaUploads } from "../../db/schema";
import { registerReplay } from "../../guards/idempotency";
import { registerPath } from "../../lib/routing";
import { validationHook } from "../../lib/validation";
import { localUpload } from "./local-upload";
import { presentUpload, uploadMediaHandler, uploadMediaRoute } from "./upload";

// An upload request whose response was lost is answered with a fresh signature for the same upload.
registerReplay("media_upload", async (c, db, id) => {
  const upload = await db.select().from(mediaUploads).where(and(eq(mediaUploads.id, id), eq(mediaUploads.agencyId, c.get("caller").agencyId))).get();
  if (!upload) return undefined;
  const listing = upload.listingId ? await db.select({ n: listings.listingNumber }).from(listings).where(eq(listings.id, upload.listingId)).get() : undefined;
  return presentUpload(c, upload, listing?.n ?? null);
});

// The signed upload path is a URL the service hands out, not an operation of the API: it stays out of the OpenAPI document.
registerPath("put", "/uploads/{upload_id}");

export const mediaApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(uploadMediaRoute, uploadMediaHandler).put("/uploads/:upload_id", localUpload);
