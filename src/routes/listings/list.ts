import { type RouteHandler, z } from "@hono/zod-openapi";
import { LISTING_STATUSES } from "../../domain/listings/lifecycle";
import { pageListings } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { ListingSchema, presentListing } from "../../schemas/listings";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";

const ListingPageSchema = pageSchema(ListingSchema, "ListingPage");

export const listListingsRoute = publicRoute(
  { endpoint: "read_listings_list", scope: "listings:read" },
  {
    method: "get",
    path: "/api/v1/listings",
    operationId: "listListings",
    tags: ["Listings"],
    summary: "List your agency's listings",
    description: "A cursor page of your agency's listings, oldest first, optionally filtered.",
    request: {
      query: z.strictObject({
        ...cursorQuery,
        status: z
          .enum(LISTING_STATUSES)
          .optional()
          .openapi({ description: "Only listings with this status.", example: "Active" }),
        agent_id: z.string().optional().openapi({
          description: "Only listings where this user is owner or an agent.",
          example: "usr_0mhx3k2a1q8v2l0c9z7rj4",
        }),
      }),
    },
    responses: {
      200: { description: "A page of listings.", content: json(ListingPageSchema) },
    },
  },
);

export const listListingsHandler: RouteHandler<typeof listListingsRoute, AppEnv> = async (c) => {
  const { cursor, limit, status, agent_id } = c.req.valid("query");
  const page = await pageListings(
    c.var.db,
    c.get("caller").agencyId,
    { status, personId: agent_id },
    { keyring: keyringOf(c.env), cursor, limit },
  );
  return c.json(ListingPageSchema.parse(pageBody(page, (l) => presentListing(l, c.env.SITE_URL))), 200);
};
