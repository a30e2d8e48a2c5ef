import { type RouteHandler, z } from "@hono/zod-openapi";
import { database } from "../../db/client";
import { deactivateUser } from "../../domain/hierarchy";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { presentInternalUser, userParam, userResponse } from "./schema";

export const deactivateUserRoute = internalRoute(["user_not_found"], {
  method: "post",
  path: "/internal/v1/users/{user_id}/deactivate",
  operationId: "deactivateUser",
  tags: ["Users"],
  summary: "Deactivate or suspend a user",
  description: "Emits `user.deactivated` once; deactivating an inactive user changes nothing.",
  request: {
    params: userParam,
    body: {
      content: {
        "application/json": { schema: z.strictObject({ reason: z.enum(["deactivated", "suspended"]).optional() }) },
      },
    },
  },
  responses: userResponse("The deactivated user."),
});

export const deactivateUserHandler: RouteHandler<typeof deactivateUserRoute, AppEnv> = async (c) => {
  const user = await deactivateUser(database(c.env.DB), c.req.valid("param").user_id, c.req.valid("json").reason);
  return c.json(presentInternalUser(user), 200);
};
