import type { RouteHandler } from "@hono/zod-openapi";
import { activateListing } from "../../domain/listings/lifecycle";
import { findListing } from "../../domain/listings/reads";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { ListingSchema, listingNumberParam, presentListing } from "../../schemas/listings";
import { helperGuard, TEST_HELPERS_TAG } from "./schema";

export const activateListingRoute = publicRoute(helperGuard("listings:write", ["listing_not_found"]), {
  method: "post",
  path: "/api/v1/test_helpers/listings/{listing_number}/activate",
  operationId: "testHelperActivateListing",
  tags: [TEST_HELPERS_TAG],
  summary: "Activate a listing (credit captured)",
  description:
    "What the dashboard does when the listing's credit is captured: `is_activated` becomes true, so " +
    "`PATCH /api/v1/listings/{listing_number}/status` can move it. Activating an activated listing changes nothing.",
  request: { params: listingNumberParam },
  responses: { 200: { description: "The activated listing.", content: json(ListingSchema) } },
});

export const activateListingHandler: RouteHandler<typeof activateListingRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const mark = idempotencyMark(c, db, { status: 200, resourceType: "listing", resourceId: listing.id });
  const activated = await activateListing(db, listing, mark);
  return c.json(ListingSchema.parse(presentListing(activated, c.env.SITE_URL)), 200);
};
