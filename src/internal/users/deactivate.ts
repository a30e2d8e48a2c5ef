import { type RouteHandler, z } from "@hono/zod-openapi";
import { deactivateUser } from "../../domain/hierarchy";
import { refreshKeysMintedBy } from "../../durable/key-changes";
import { json } from "../../http/content";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
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
  const user = await deactivateUser(c.var.db, c.req.valid("param").user_id, c.req.valid("json").reason);
  // Told even when nothing changed, so repeating a call whose notice was cut short completes it.
  await refreshKeysMintedBy(c.env, user.id, { subtree: false });
  return c.json(presentInternalUser(user), 200);
};
