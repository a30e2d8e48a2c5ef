import { type RouteHandler, z } from "@hono/zod-openapi";
import { deactivateUser } from "../../accounts/people";
import { userOfAgency } from "../../domain/people/users";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentUser, UserSchema } from "../../schemas/users";
import { outsideHelperGuard, TEST_HELPERS_TAG, userIdParam } from "./schema";

export const deactivateUserRoute = publicRoute(outsideHelperGuard("users:read", ["user_not_found"]), {
  method: "post",
  path: "/api/v1/test_helpers/users/{user_id}/deactivate",
  operationId: "testHelperDeactivateUser",
  tags: [TEST_HELPERS_TAG],
  summary: "Deactivate or suspend a user (emits user.deactivated)",
  description:
    "What the dashboard's user management does, through the same code: `is_active` becomes false and " +
    "`user.deactivated` is emitted, once; deactivating an inactive user changes nothing. Every API key the user " +
    "minted, the one calling included, is refused from the very next request with 401 `api_key_disabled` " +
    "(`details.reason`: `minting_user_inactive`).",
  request: {
    params: userIdParam,
    body: {
      content: json(
        z.strictObject({
          reason: z
            .enum(["deactivated", "suspended"])
            .default("deactivated")
            .openapi({ description: "`data.reason`; `deactivated` when omitted.", example: "suspended" }),
        }),
      ),
    },
  },
  responses: { 200: { description: "The deactivated user.", content: json(UserSchema) } },
});

export const deactivateUserHandler: RouteHandler<typeof deactivateUserRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const user = await userOfAgency(db, c.get("caller").agencyId, c.req.valid("param").user_id);
  const deactivated = await deactivateUser(
    c.env,
    db,
    user.id,
    c.req.valid("json").reason,
    idempotencyMark(c, db, { status: 200, resourceType: "user", resourceId: user.id }),
  );
  return c.json(UserSchema.parse(presentUser(deactivated)), 200);
};
