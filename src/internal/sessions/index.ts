import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { createSessionHandler, createSessionRoute } from "./create";
import { revokeSessionHandler, revokeSessionRoute } from "./revoke";

export const sessionsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createSessionRoute, createSessionHandler)
  .openapi(revokeSessionRoute, revokeSessionHandler);
