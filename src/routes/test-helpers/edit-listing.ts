import { type RouteHandler, z } from "@hono/zod-openapi";
import { editListing } from "../../domain/listings/edit";
import { findListing } from "../../domain/listings/reads";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { ListingSchema, listingNumberParam, presentListing } from "../../schemas/listings";
import { helperGuard, TEST_HELPERS_TAG } from "./schema";

const person = (description: string) =>
  z.string().max(64).optional().openapi({ description, example: "usr_0mhx3k2a1q8v2l0c9z7rj4" });

export const editListingRoute = publicRoute(
  helperGuard("listings:write", ["listing_not_found", "agent_not_in_hierarchy", "agency_quota_exceeded"]),
  {
    method: "post",
    path: "/api/v1/test_helpers/listings/{listing_number}/edit",
    operationId: "testHelperEditListing",
    tags: [TEST_HELPERS_TAG],
    summary: "Edit a listing's address or agents (emits listing.updated)",
    description:
      "What a dashboard edit of the listing's metadata does: the fields sent replace the listing's, and " +
      "`listing.updated` names those that changed. Sending only the current values changes nothing and emits " +
      "nothing. People must be users of your agency (422 `agent_not_in_hierarchy`).",
    request: {
      params: listingNumberParam,
      body: {
        content: json(
          z.strictObject({
            address: z
              .string()
              .trim()
              .min(1)
              .max(300)
              .optional()
              .openapi({ description: "The new street address.", example: "14 Harbour Street, Portside" }),
            owner_user_id: person("The new owner."),
            agent_one_id: person("The new first agent."),
            agent_two_id: z
              .string()
              .max(64)
              .nullable()
              .optional()
              .openapi({ description: "The new second agent; null removes it.", example: null }),
          }),
        ),
      },
    },
    responses: { 200: { description: "The listing.", content: json(ListingSchema) } },
  },
);

export const editListingHandler: RouteHandler<typeof editListingRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const b = c.req.valid("json");
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const mark = idempotencyMark(c, db, { status: 200, resourceType: "listing", resourceId: listing.id });
  const edited = await editListing(
    db,
    listing,
    { address: b.address, ownerUserId: b.owner_user_id, agentOneId: b.agent_one_id, agentTwoId: b.agent_two_id },
    mark,
  );
  return c.json(ListingSchema.parse(presentListing(edited, c.env.SITE_URL)), 200);
};
