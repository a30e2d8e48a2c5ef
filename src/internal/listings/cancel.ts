import { type RouteHandler, z } from "@hono/zod-openapi";
import { cancelListing } from "../../domain/listings/cancel";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { presentListing } from "../../schemas/listings";
import { listingAnswer, listingParams } from "./schema";

export const cancelListingRoute = internalRoute(["listing_not_found", "listing_already_cancelled"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/cancel",
  operationId: "cancelListingFromDashboard",
  tags: ["Listings"],
  summary: "Cancel a listing from the dashboard, also past the no-fee window",
  request: {
    params: listingParams,
    body: { content: json(z.strictObject({ reason: z.string().max(500).optional() })) },
  },
  responses: listingAnswer("The cancelled listing."),
});

export const cancelListingHandler: RouteHandler<typeof cancelListingRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const cancelled = await cancelListing(db, listing, { reason: c.req.valid("json").reason, source: "dashboard" });
  return c.json(presentListing(cancelled, c.env.SITE_URL), 200);
};
