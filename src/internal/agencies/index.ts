import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { createAgencyHandler, createAgencyRoute } from "./create";
import { getAgencyHandler, getAgencyRoute } from "./get";
import { listAgenciesHandler, listAgenciesRoute } from "./list";

export const agenciesInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createAgencyRoute, createAgencyHandler)
  .openapi(listAgenciesRoute, listAgenciesHandler)
  .openapi(getAgencyRoute, getAgencyHandler);
