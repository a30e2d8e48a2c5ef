import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { catalogHandler, catalogRoute } from "./catalog";
import { createEndpointHandler, createEndpointRoute } from "./create-endpoint";
import { deleteEndpointHandler, deleteEndpointRoute } from "./delete-endpoint";
import { getEndpointHandler, getEndpointRoute } from "./get-endpoint";
import { listDeliveriesHandler, listDeliveriesRoute } from "./list-deliveries";
import { listEndpointsHandler, listEndpointsRoute } from "./list-endpoints";
import { testEndpointHandler, testEndpointRoute } from "./test-endpoint";
import { updateEndpointHandler, updateEndpointRoute } from "./update-endpoint";

export const webhooksApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(catalogRoute, catalogHandler)
  .openapi(createEndpointRoute, createEndpointHandler)
  .openapi(listEndpointsRoute, listEndpointsHandler)
  .openapi(getEndpointRoute, getEndpointHandler)
  .openapi(updateEndpointRoute, updateEndpointHandler)
  .openapi(deleteEndpointRoute, deleteEndpointHandler)
  .openapi(testEndpointRoute, testEndpointHandler)
  .openapi(listDeliveriesRoute, listDeliveriesHandler);
