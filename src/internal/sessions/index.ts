import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { createSessionHandler, createSessionRoute } from "./create";

export const sessionsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  createSessionRoute,
  createSessionHandler,
);
