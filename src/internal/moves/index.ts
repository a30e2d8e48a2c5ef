import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { getMoveHandler, getMoveRoute } from "./get";
import { startMoveHandler, startMoveRoute } from "./start";

export const movesInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(startMoveRoute, startMoveHandler)
  .openapi(getMoveRoute, getMoveHandler);
