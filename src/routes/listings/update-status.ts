import { type RouteHandler, z } from "@hono/zod-openapi";
import { changeStatus, SETTABLE_STATUSES } from "../../domain/listings/lifecycle";
import { findListing } from "../../domain/listings/reads";
import { ifMatch, setEtag } from "../../http/admission/conditional";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { withValueHints } from "../../http/validation";
import { ListingSchema, listingNumberParam, presentListing, WRITER_ROLES } from "../../schemas/listings";

export const updateStatusRoute = publicRoute(
  {
    endpoint: "update_listing_status",
    scope: "listings:write",
    roles: WRITER_ROLES,
    conditional: "write",
    errors: ["listing_not_found", "listing_not_activated", "no_op_transition"],
  },
  {
    method: "patch",
    path: "/api/v1/listings/{listing_number}/status",
    operationId: "updateListingStatus",
    tags: ["Listings"],
    summary: "Move a listing's lifecycle status",
    description:
      "Only an activated listing moves (409 `listing_not_activated` before activation), and only to a status " +
      "other than its current one (409 `no_op_transition`). Every status but `Cancelled` can be set here; " +
      "cancelling has its own route. Emits `listing.status_changed`.",
    request: {
      params: listingNumberParam,
      body: {
        content: json(
          z
            .strictObject({
              new_status: withValueHints(
                z.enum(SETTABLE_STATUSES).openapi({ description: "The status to move to.", example: "Sold" }),
                {
                  Cancelled:
                    "A listing is cancelled with POST /api/v1/listings/{listing_number}/cancel, not by its status.",
                },
              ),
            })
            .openapi("UpdateListingStatus"),
        ),
      },
    },
    responses: {
      200: { description: "The updated listing.", content: json(ListingSchema) },
    },
  },
);

export const updateStatusHandler: RouteHandler<typeof updateStatusRoute, AppEnv> = async (c) => {
  const ifVersion = ifMatch(c);
  const db = c.var.db;
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const mark = idempotencyMark(c, db, {
    status: 200,
    resourceType: "listing",
    resourceId: listing.id,
    ifChanged: true,
  });
  const updated = await changeStatus(db, listing, c.req.valid("json").new_status, mark, ifVersion);
  setEtag(c, updated.version);
  return c.json(ListingSchema.parse(presentListing(updated, c.env.SITE_URL)), 200);
};
