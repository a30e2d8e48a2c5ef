import { type RouteHandler, z } from "@hono/zod-openapi";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { deliveriesOf } from "../../media/delivery/records";
import { uploadsOf } from "../../media/uploads/records";
import { listingParams } from "../listings/schema";
import { DeliverySchema, presentDelivery, presentUpload, UploadSchema } from "./schema";

export const listListingMediaRoute = internalRoute(["listing_not_found"], {
  method: "get",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/media",
  operationId: "listListingMedia",
  tags: ["Media"],
  summary: "A listing's uploads and deliveries",
  request: { params: listingParams },
  responses: {
    200: {
      description: "Uploads (oldest first) and deliveries (newest first).",
      content: json(z.object({ uploads: z.array(UploadSchema), deliveries: z.array(DeliverySchema) })),
    },
  },
});

export const listListingMediaHandler: RouteHandler<typeof listListingMediaRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const [uploads, deliveries] = await Promise.all([uploadsOf(db, listing), deliveriesOf(db, listing)]);
  return c.json({ uploads: uploads.map(presentUpload), deliveries: deliveries.map(presentDelivery) }, 200);
};
