import { OpenAPIHono } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { validationHook } from "../../http/validation";
import { changeManagerHandler, changeManagerRoute } from "./change-manager";
import { createUserHandler, createUserRoute } from "./create";
import { deactivateUserHandler, deactivateUserRoute } from "./deactivate";
import { getUserHandler, getUserRoute } from "./get";
import { listUsersHandler, listUsersRoute } from "./list";

export const usersInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(createUserRoute, createUserHandler)
  .openapi(listUsersRoute, listUsersHandler)
  .openapi(getUserRoute, getUserHandler)
  .openapi(changeManagerRoute, changeManagerHandler)
  .openapi(deactivateUserRoute, deactivateUserHandler);
