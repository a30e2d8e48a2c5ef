import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../env";
import { validationHook } from "../../lib/validation";
import { getUser, getUserRoute } from "./get";
import { listUsers, listUsersRoute } from "./list";

export const usersApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook }).openapi(listUsersRoute, listUsers).openapi(getUserRoute, getUser);
