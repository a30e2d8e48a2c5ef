import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { getUser, getUserRoute } from "./get";
import { listUsers, listUsersRoute } from "./list";

export const usersApi = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(listUsersRoute, listUsers)
  .openapi(getUserRoute, getUser);
