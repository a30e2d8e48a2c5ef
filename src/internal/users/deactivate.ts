import { type RouteHandler, z } from "@hono/zod-openapi";
import { deactivateUser } from "../../accounts/people";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { presentInternalUser, userParam, userResponse } from "./schema";

export const deactivateUserRoute = internalRoute(["user_not_found"], {
  method: "post",
  path: "/internal/v1/users/{user_id}/deactivate",
  operationId: "deactivateUser",
  tags: ["Users"],
  summary: "Deactivate or suspend a user",
  description:
    "Emits `user.deactivated` once; deactivating an inactive user changes nothing. Every API key the user " +
    "minted is refused from the very next request with 401 `api_key_disabled` " +
    "(`details.reason`: `minting_user_inactive`).",
  request: {
    params: userParam,
    body: {
      content: json(z.strictObject({ reason: z.enum(["deactivated", "suspended"]).optional() })),
    },
  },
  responses: userResponse("The deactivated user."),
});

export const deactivateUserHandler: RouteHandler<typeof deactivateUserRoute, AppEnv> = async (c) => {
  const user = await deactivateUser(c.env, c.var.db, c.req.valid("param").user_id, c.req.valid("json").reason);
  return c.json(presentInternalUser(user), 200);
};
