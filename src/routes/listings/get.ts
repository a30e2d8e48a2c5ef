import type { RouteHandler } from "@hono/zod-openapi";
import { findListing, listingVersion } from "../../domain/listings/reads";
import { setEtag } from "../../http/admission/conditional";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { ListingSchema, listingNumberParam, presentListing } from "../../schemas/listings";

export const getListingRoute = publicRoute(
  {
    endpoint: "read_listing_single",
    scope: "listings:read",
    conditional: "read",
    currentVersion: (db, agencyId, param) => listingVersion(db, agencyId, param("listing_number") ?? ""),
    errors: ["listing_not_found"],
  },
  {
    method: "get",
    path: "/api/v1/listings/{listing_number}",
    operationId: "getListing",
    tags: ["Listings"],
    summary: "Get a listing",
    description:
      "A listing of your agency. Another agency's listing answers 404 `listing_not_found`, exactly like an " +
      "unknown number.",
    request: { params: listingNumberParam },
    responses: { 200: { description: "The listing.", content: json(ListingSchema) } },
  },
);

export const getListingHandler: RouteHandler<typeof getListingRoute, AppEnv> = async (c) => {
  const listing = await findListing(c.var.db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  setEtag(c, listing.version);
  return c.json(ListingSchema.parse(presentListing(listing, c.env.SITE_URL)), 200);
};
