import { type RouteHandler, z } from "@hono/zod-openapi";
import { findListing } from "../../domain/listings/reads";
import { pageOrders } from "../../domain/orders";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { listingNumberParam } from "../../schemas/listings";
import { OrderSchema, presentOrder } from "../../schemas/orders";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";

const OrderPageSchema = pageSchema(OrderSchema, "OrderPage");

export const listOrdersRoute = publicRoute(
  { endpoint: "get_listing_orders", scope: "orders:read", errors: ["listing_not_found"] },
  {
    method: "get",
    path: "/api/v1/listings/{listing_number}/orders",
    operationId: "listListingOrders",
    tags: ["Listings"],
    summary: "List a listing's invoices and payments",
    description:
      "A cursor page of the invoices and payments tied to the listing, oldest first. Billing is read-only here.",
    request: { params: listingNumberParam, query: z.strictObject(cursorQuery) },
    responses: {
      200: { description: "A page of orders.", content: json(OrderPageSchema) },
    },
  },
);

export const listOrdersHandler: RouteHandler<typeof listOrdersRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const { cursor, limit } = c.req.valid("query");
  const page = await pageOrders(db, listing, { keyring: keyringOf(c.env), cursor, limit });
  return c.json(OrderPageSchema.parse(pageBody(page, presentOrder)), 200);
};
