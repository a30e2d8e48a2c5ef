import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { activateListingHandler, activateListingRoute } from "./activate";
import { cancelListingHandler, cancelListingRoute } from "./cancel";
import { editListingHandler, editListingRoute } from "./edit";
import { recordOrderHandler, recordOrderRoute } from "./record-order";

export const listingsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(activateListingRoute, activateListingHandler)
  .openapi(editListingRoute, editListingHandler)
  .openapi(cancelListingRoute, cancelListingHandler)
  .openapi(recordOrderRoute, recordOrderHandler);
