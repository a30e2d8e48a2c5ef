import { OpenAPIHono } from "@hono/zod-openapi";
import { and, eq } from "drizzle-orm";
import type { AppEnv } from "../../env";
import { listings } from "../../db/schema";
import { registerReplay } from "../../guards/idempotency";
import { validationHook } from "../../lib/validation";
import { cancelListingHandler, cancelListingRoute } from "./cancel";
import { createListingHandler, createListingRoute } from "./create";
import { getListingHandler, getListingRoute } from "./get";
import { listListingsHandler, listListingsRoute } from "./list";
import { listOrdersHandler, listOrdersRoute } from "./orders";
import { ListingSchema, presentListing } from "./schema";
import { floorplanHandler, floorplanRoute, matterportHandler, matterportRoute, otherSectionHandler, otherSectionRoute } from "./sections";
import { updateStatusHandler, updateStatusRoute } from "./update-status";

// A listing write whose response was lost is answered with the listing as it stands.
registerReplay("listing", async (c, db, id) => {
  const listing = await db.select().from(listings).where(and(eq(listings.id, id), eq(listings.agencyId, c.get("caller").agencyId))).get();
  return listing ? ListingSchema.parse(presentListing(listing, c.env.SITE_URL)) : undefined;
});

export const listingsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createListingRoute, createListingHandler)
  .openapi(listListingsRoute, listListingsHandler)
  .openapi(getListingRoute, getListingHandler)
  .openapi(updateStatusRoute, updateStatusHandler)
  .openapi(cancelListingRoute, cancelListingHandler)
  .openapi(floorplanRoute, floorplanHandler)
  .openapi(matterportRoute, matterportHandler)
  .openapi(otherSectionRoute, otherSectionHandler)
  .openapi(listOrdersRoute, listOrdersHandler);
