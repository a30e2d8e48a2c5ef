import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../env";
import { validationHook } from "../../lib/validation";
import { availabilityHandler, availabilityRoute } from "./availability";

export const schedulingApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(availabilityRoute, availabilityHandler);
