import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { createAgencyHandler, createAgencyRoute } from "./create";
import { getAgencyHandler, getAgencyRoute } from "./get";
import { getAgencyQuotasHandler, getAgencyQuotasRoute } from "./get-quotas";
import { listAgenciesHandler, listAgenciesRoute } from "./list";
import { setAgencyQuotasHandler, setAgencyQuotasRoute } from "./set-quotas";

export const agenciesInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createAgencyRoute, createAgencyHandler)
  .openapi(listAgenciesRoute, listAgenciesHandler)
  .openapi(getAgencyRoute, getAgencyHandler)
  .openapi(getAgencyQuotasRoute, getAgencyQuotasHandler)
  .openapi(setAgencyQuotasRoute, setAgencyQuotasHandler);
