import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { availabilityHandler, availabilityRoute } from "./availability";

export const schedulingApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  availabilityRoute,
  availabilityHandler,
);
