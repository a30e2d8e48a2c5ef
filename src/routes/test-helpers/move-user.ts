import { type RouteHandler, z } from "@hono/zod-openapi";
import { moveUser } from "../../accounts/people";
import { activeUserOfAgency, userOfAgency } from "../../domain/people/users";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentUser, UserSchema } from "../../schemas/users";
import { outsideHelperGuard, TEST_HELPERS_TAG, userIdParam } from "./schema";

export const moveUserRoute = publicRoute(
  outsideHelperGuard("users:read", ["user_not_found", "hierarchy_cycle", "invalid_role"]),
  {
    method: "post",
    path: "/api/v1/test_helpers/users/{user_id}/move",
    operationId: "testHelperMoveUser",
    tags: [TEST_HELPERS_TAG],
    summary: "Change a user's manager (emits user.hierarchy_changed)",
    description:
      "What the dashboard does when a user gets another manager inside your agency, through the same code; the " +
      "user's subtree moves with them. The manager must be an active user of your agency " +
      "(404 `user_not_found`) outside the user's own " +
      "subtree (422 `hierarchy_cycle`); `null` puts the user at the top, which only an agency owner role may be " +
      "(422 `invalid_role`). Moving a user to the manager they have changes nothing and emits nothing.",
    request: {
      params: userIdParam,
      body: {
        content: json(
          z.strictObject({
            manager_id: z
              .string()
              .max(64)
              .nullable()
              .openapi({ description: "The new manager; null for the top.", example: "usr_0mhx3k2a1q8v2l0c9z7rj5" }),
          }),
        ),
      },
    },
    responses: { 200: { description: "The moved user.", content: json(UserSchema) } },
  },
);

export const moveUserHandler: RouteHandler<typeof moveUserRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const agencyId = c.get("caller").agencyId;
  const managerId = c.req.valid("json").manager_id;
  const user = await userOfAgency(db, agencyId, c.req.valid("param").user_id);
  // Held to your agency: the manager is yours too, never another agency's.
  const manager = managerId ? await activeUserOfAgency(db, agencyId, managerId) : null;
  const moved = await moveUser(
    c.env,
    db,
    user.id,
    manager?.id ?? null,
    idempotencyMark(c, db, { status: 200, resourceType: "user", resourceId: user.id }),
  );
  return c.json(UserSchema.parse(presentUser(moved)), 200);
};
