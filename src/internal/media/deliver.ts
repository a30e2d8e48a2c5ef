import { type RouteHandler, z } from "@hono/zod-openapi";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { deliverListingMedia } from "../../media/delivery/records";
import { listingParams } from "../listings/schema";
import { DeliverySchema, presentDelivery } from "./schema";

export const deliverListingMediaRoute = internalRoute(
  ["listing_not_found", "delivery_destination_not_found", "nothing_to_deliver", "queue_unavailable"],
  {
    method: "post",
    path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/media/deliveries",
    operationId: "deliverListingMedia",
    tags: ["Media"],
    summary: "Deliver a listing's media again",
    description:
      "Queues a delivery to the agent's storage. `scope` `all` (default) sends every completed upload again; " +
      "`undelivered` only those not delivered yet. Ends in `media.delivery.completed` or `media.delivery.failed`.",
    request: {
      params: listingParams,
      body: {
        content: json(z.strictObject({ scope: z.enum(["all", "undelivered"]).default("all") })),
      },
    },
    responses: {
      202: { description: "The queued delivery.", content: json(DeliverySchema) },
    },
  },
);

export const deliverListingMediaHandler: RouteHandler<typeof deliverListingMediaRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const delivery = await deliverListingMedia(c.env, db, listing, c.req.valid("json").scope);
  return c.json(presentDelivery(delivery), 202);
};
