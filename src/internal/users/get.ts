import type { RouteHandler } from "@hono/zod-openapi";
import { getUserById } from "../../domain/people/hierarchy";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { presentInternalUser, userParam, userResponse } from "./schema";

export const getUserRoute = internalRoute(["user_not_found"], {
  method: "get",
  path: "/internal/v1/users/{user_id}",
  operationId: "getUser",
  tags: ["Users"],
  summary: "Get any user",
  request: { params: userParam },
  responses: userResponse("The user."),
});

export const getUserHandler: RouteHandler<typeof getUserRoute, AppEnv> = async (c) =>
  c.json(presentInternalUser(await getUserById(c.var.db, c.req.valid("param").user_id)), 200);
