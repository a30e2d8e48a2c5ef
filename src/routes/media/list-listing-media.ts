import { type RouteHandler, z } from "@hono/zod-openapi";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { pageListingUploads } from "../../media/uploads/views";
import { listingNumberParam } from "../../schemas/listings";
import { presentUploadStatus, UploadStatusSchema } from "../../schemas/media/uploads";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";

const UploadPageSchema = pageSchema(UploadStatusSchema, "MediaUploadPage");

export const listListingMediaRoute = publicRoute(
  { endpoint: "read_media_list", scope: "listings:read", errors: ["listing_not_found"] },
  {
    method: "get",
    path: "/api/v1/listings/{listing_number}/media",
    operationId: "listListingUploads",
    tags: ["Media"],
    summary: "List a listing's uploads",
    description: [
      "A cursor page of the listing's uploads, oldest first, each as `GET /api/v1/media/uploads/{upload_id}` " +
        "answers it: where the file stands, its sizes and its latest delivery to the agent's cloud storage.",
      "",
      "Needs the `listings:read` scope. Another agency's listing answers 404 `listing_not_found`, exactly like " +
        "an unknown number.",
    ].join("\n"),
    request: { params: listingNumberParam, query: z.strictObject(cursorQuery) },
    responses: { 200: { description: "A page of the listing's uploads.", content: json(UploadPageSchema) } },
  },
);

export const listListingMediaHandler: RouteHandler<typeof listListingMediaRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const { cursor, limit } = c.req.valid("query");
  const page = await pageListingUploads(db, listing, { keyring: keyringOf(c.env), cursor, limit });
  return c.json(UploadPageSchema.parse(pageBody(page, presentUploadStatus)), 200);
};
