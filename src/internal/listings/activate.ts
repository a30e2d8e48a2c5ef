import type { RouteHandler } from "@hono/zod-openapi";
import { activateListing } from "../../domain/listings/lifecycle";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { presentListing } from "../../schemas/listings";
import { listingAnswer, listingParams } from "./schema";

export const activateListingRoute = internalRoute(["listing_not_found"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/activate",
  operationId: "activateListing",
  tags: ["Listings"],
  summary: "Activate a listing (credit captured)",
  request: { params: listingParams },
  responses: listingAnswer("The activated listing."),
});

export const activateListingHandler: RouteHandler<typeof activateListingRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const activated = await activateListing(db, await findListing(db, p.agency_id, p.listing_number));
  return c.json(presentListing(activated, c.env.SITE_URL), 200);
};
