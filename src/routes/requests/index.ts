import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { getRequestHandler, getRequestRoute } from "./get";

export const requestsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(
  getRequestRoute,
  getRequestHandler,
);
