import { type RouteHandler, z } from "@hono/zod-openapi";
import { and, asc, eq, or } from "drizzle-orm";
import { database } from "../../db/client";
import { listings } from "../../db/schema";
import { LISTING_STATUSES } from "../../domain/listings";
import type { AppEnv } from "../../http/env";
import { after, cursorQuery, decodeCursor, pageSchema, toPage } from "../../http/pagination";
import { publicRoute } from "../../http/route";
import { ListingSchema, presentListing } from "../../schemas/listings";

export const ListingPageSchema = pageSchema(ListingSchema, "ListingPage");

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
      200: { description: "A page of listings.", content: { "application/json": { schema: ListingPageSchema } } },
    },
  },
);

export const listListingsHandler: RouteHandler<typeof listListingsRoute, AppEnv> = async (c) => {
  const { cursor, limit, status, agent_id } = c.req.valid("query");
  const { agencyId } = c.get("caller");
  const list = `listings:${agencyId}:${status ?? ""}:${agent_id ?? ""}`;
  const at = await decodeCursor(c.env.SECRET_KEY, list, cursor);
  const rows = await database(c.env.DB)
    .select()
    .from(listings)
    .where(
      and(
        eq(listings.agencyId, agencyId),
        status ? eq(listings.status, status) : undefined,
        agent_id ? orPerson(agent_id) : undefined,
        after(listings.createdAt, listings.id, at),
      ),
    )
    .orderBy(asc(listings.createdAt), asc(listings.id))
    .limit(limit + 1);
  return c.json(
    ListingPageSchema.parse(
      await toPage(c.env.SECRET_KEY, list, rows, limit, (l) => presentListing(l, c.env.SITE_URL)),
    ),
    200,
  );
};

const orPerson = (id: string) =>
  or(eq(listings.ownerUserId, id), eq(listings.agentOneId, id), eq(listings.agentTwoId, id));
