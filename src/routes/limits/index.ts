import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { getLimits, getLimitsRoute } from "./get";

export const limitsApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(getLimitsRoute, getLimits);
