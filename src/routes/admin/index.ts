import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { updateRateLimits, updateRateLimitsRoute } from "./update-rate-limits";

export const adminApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  updateRateLimitsRoute,
  updateRateLimits,
);
