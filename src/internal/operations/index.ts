import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { requestHandler, requestRoute } from "./request";
import { resealHandler, resealRoute } from "./reseal";
import { listShardsHandler, listShardsRoute } from "./shards";
import { usageHandler, usageRoute } from "./usage";

export const operationsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(resealRoute, resealHandler)
  .openapi(usageRoute, usageHandler)
  .openapi(listShardsRoute, listShardsHandler)
  .openapi(requestRoute, requestHandler);
