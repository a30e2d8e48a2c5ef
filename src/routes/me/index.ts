import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { getIdentity, getIdentityRoute } from "./get";

export const meApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(getIdentityRoute, getIdentity);
