import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { deliverListingMediaHandler, deliverListingMediaRoute } from "./deliver";
import { getDeliveryDestinationHandler, getDeliveryDestinationRoute } from "./get-destination";
import { listListingMediaHandler, listListingMediaRoute } from "./list";
import { removeDeliveryDestinationHandler, removeDeliveryDestinationRoute } from "./remove-destination";
import { setDeliveryDestinationHandler, setDeliveryDestinationRoute } from "./set-destination";

export const mediaInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(setDeliveryDestinationRoute, setDeliveryDestinationHandler)
  .openapi(getDeliveryDestinationRoute, getDeliveryDestinationHandler)
  .openapi(removeDeliveryDestinationRoute, removeDeliveryDestinationHandler)
  .openapi(listListingMediaRoute, listListingMediaHandler)
  .openapi(deliverListingMediaRoute, deliverListingMediaHandler);
