import type { RouteHandler } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import { pageUsers } from "../../domain/people/users";
import { ROLES } from "../../domain/roles";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";
import { presentUser, UserSchema } from "../../schemas/users";

const UserPageSchema = pageSchema(UserSchema, "UserPage");

export const listUsersRoute = publicRoute(
  { endpoint: "read_users_list", scope: "users:read" },
  {
    method: "get",
    path: "/api/v1/users",
    operationId: "listUsers",
    tags: ["Users"],
    summary: "List users in your agency hierarchy",
    description:
      "A cursor page of the users under the calling agency, oldest first. Users are read-only here; they are " +
      "managed in the dashboard.",
    request: {
      query: z.strictObject({
        ...cursorQuery,
        role: z.enum(ROLES).optional().openapi({ description: "Only users with this role." }),
        is_active: z
          .enum(["true", "false"])
          .optional()
          .openapi({ description: "Only active (`true`) or deactivated (`false`) users." }),
      }),
    },
    responses: {
      200: { description: "A page of users.", content: json(UserPageSchema) },
    },
  },
);

export const listUsers: RouteHandler<typeof listUsersRoute, AppEnv> = async (c) => {
  const { cursor, limit, role, is_active } = c.req.valid("query");
  const filters = { role, isActive: is_active === undefined ? undefined : is_active === "true" };
  const page = await pageUsers(c.var.db, c.get("caller").agencyId, filters, {
    keyring: keyringOf(c.env),
    cursor,
    limit,
  });
  return c.json(UserPageSchema.parse(pageBody(page, presentUser)), 200);
};
