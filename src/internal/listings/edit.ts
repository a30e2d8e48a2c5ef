import { type RouteHandler, z } from "@hono/zod-openapi";
import { editListing } from "../../domain/listings/edit";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { presentListing } from "../../schemas/listings";
import { listingAnswer, listingParams } from "./schema";

export const editListingRoute = internalRoute(
  ["listing_not_found", "agent_not_in_hierarchy", "agency_quota_exceeded"],
  {
    method: "patch",
    path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}",
    operationId: "editListing",
    tags: ["Listings"],
    summary: "Edit a listing's address or agents (emits listing.updated)",
    request: {
      params: listingParams,
      body: {
        content: json(
          z.strictObject({
            address: z.string().trim().min(1).max(300).optional(),
            owner_user_id: z.string().optional(),
            agent_one_id: z.string().optional(),
            agent_two_id: z.string().nullable().optional(),
          }),
        ),
      },
    },
    responses: listingAnswer("The listing."),
  },
);

export const editListingHandler: RouteHandler<typeof editListingRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const b = c.req.valid("json");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const updated = await editListing(db, listing, {
    address: b.address,
    ownerUserId: b.owner_user_id,
    agentOneId: b.agent_one_id,
    agentTwoId: b.agent_two_id,
  });
  return c.json(presentListing(updated, c.env.SITE_URL), 200);
};
