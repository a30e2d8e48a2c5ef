import { type RouteHandler, z } from "@hono/zod-openapi";
import { cancelListing } from "../../domain/listings/cancel";
import { findListing } from "../../domain/listings/reads";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { ListingSchema, listingNumberParam, presentListing, WRITER_ROLES } from "../../schemas/listings";

export const cancelListingRoute = publicRoute(
  {
    endpoint: "cancel_listing",
    scope: "listings:write",
    roles: WRITER_ROLES,
    errors: ["listing_not_found", "outside_cancellation_window", "listing_already_cancelled"],
  },
  {
    method: "post",
    path: "/api/v1/listings/{listing_number}/cancel",
    operationId: "cancelListing",
    tags: ["Listings"],
    summary: "Cancel a listing inside the no-fee window",
    description:
      "The no-fee window closes your agency's `cancellation_notice_hours` (24 unless set otherwise) before the " +
      "listing's earliest scheduled shoot; a listing with no scheduled shoot can always be cancelled here. Past " +
      "the window, 409 `outside_cancellation_window`: cancel through the dashboard. The listing's scheduled " +
      "shoots are cancelled too. Emits `listing.cancelled` and an `appointment.cancelled` per shoot, once.",
    request: {
      params: listingNumberParam,
      body: {
        content: json(
          z
            .strictObject({
              reason: z
                .string()
                .trim()
                .min(1)
                .max(500)
                .optional()
                .openapi({ description: "Why the listing is cancelled.", example: "Seller withdrew" }),
            })
            .openapi("CancelListing"),
        ),
      },
    },
    responses: {
      200: { description: "The cancelled listing.", content: json(ListingSchema) },
    },
  },
);

export const cancelListingHandler: RouteHandler<typeof cancelListingRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const mark = idempotencyMark(c, db, {
    status: 200,
    resourceType: "listing",
    resourceId: listing.id,
    ifChanged: true,
  });
  const cancelled = await cancelListing(db, listing, { reason: c.req.valid("json").reason, source: "api" }, mark);
  return c.json(ListingSchema.parse(presentListing(cancelled, c.env.SITE_URL)), 200);
};
