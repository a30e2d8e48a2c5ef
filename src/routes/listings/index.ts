import { OpenAPIHono } from "@hono/zod-openapi";
import { listingById } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import type { Replayer } from "../../http/registry";
import { validationHook } from "../../http/validation";
import { ListingSchema, presentListing } from "../../schemas/listings";
import { cancelListingHandler, cancelListingRoute } from "./cancel";
import { createListingHandler, createListingRoute } from "./create";
import { getListingHandler, getListingRoute } from "./get";
import { listListingsHandler, listListingsRoute } from "./list";
import { listOrdersHandler, listOrdersRoute } from "./orders";
import {
  floorplanHandler,
  floorplanRoute,
  matterportHandler,
  matterportRoute,
  otherSectionHandler,
  otherSectionRoute,
} from "./sections";
import { updateStatusHandler, updateStatusRoute } from "./update-status";

/** A listing write whose response was lost is answered with the listing as it stands. */
export const replayListing: Replayer = async ({ db, env, agencyId }, id) => {
  const listing = await listingById(db, agencyId, id);
  return listing ? ListingSchema.parse(presentListing(listing, env.SITE_URL)) : undefined;
};

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
