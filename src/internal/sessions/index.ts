import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { createSessionHandler, createSessionRoute } from "./create";
import { listUserSessionsHandler, listUserSessionsRoute } from "./list";
import { revokeSessionHandler, revokeSessionRoute } from "./revoke";
import { revokeUserSessionsHandler, revokeUserSessionsRoute } from "./revoke-all";

export const sessionsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createSessionRoute, createSessionHandler)
  .openapi(revokeSessionRoute, revokeSessionHandler)
  .openapi(listUserSessionsRoute, listUserSessionsHandler)
  .openapi(revokeUserSessionsRoute, revokeUserSessionsHandler);
