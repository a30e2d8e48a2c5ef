import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { getEventHandler, getEventRoute } from "./get";
import { listEventsHandler, listEventsRoute } from "./list";

export const eventsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listEventsRoute, listEventsHandler)
  .openapi(getEventRoute, getEventHandler);
