import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { connectCalendarHandler, connectCalendarRoute } from "./connect";
import { disconnectCalendarHandler, disconnectCalendarRoute } from "./disconnect";

export const calendarsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(connectCalendarRoute, connectCalendarHandler)
  .openapi(disconnectCalendarRoute, disconnectCalendarHandler);
