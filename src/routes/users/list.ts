import type { RouteHandler } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { database } from "../../db/client";
import { users } from "../../db/schema";
import { ROLES } from "../../domain/roles";
import type { AppEnv } from "../../http/env";
import { after, cursorQuery, decodeCursor, pageSchema, toPage } from "../../http/pagination";
import { publicRoute } from "../../http/route";
import { presentUser, UserSchema } from "../../schemas/users";

export const UserPageSchema = pageSchema(UserSchema, "UserPage");

export const listUsersRoute = publicRoute(
  { endpoint: "read_users_list", scope: "users:read" },
  {
    method: "get",
    path: "/api/v1/users",
    operationId: "listUsers",
    tags: ["Users"],
    summary: "List users in your agency hierarchy",
    description:
      "A cursor page of the users under the calling agency, oldest first. Users are read-only here; they are managed in the dashboard.",
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
      200: { description: "A page of users.", content: { "application/json": { schema: UserPageSchema } } },
    },
  },
);

export const listUsers: RouteHandler<typeof listUsersRoute, AppEnv> = async (c) => {
  const { cursor, limit, role, is_active } = c.req.valid("query");
  const { agencyId } = c.get("caller");
  const list = `users:${agencyId}:${role ?? ""}:${is_active ?? ""}`;
  const at = await decodeCursor(c.env.SECRET_KEY, list, cursor);
  const rows = await database(c.env.DB)
    .select()
    .from(users)
    .where(
      and(
        eq(users.agencyId, agencyId),
        role ? eq(users.role, role) : undefined,
        is_active ? eq(users.isActive, is_active === "true") : undefined,
        after(users.createdAt, users.id, at),
      ),
    )
    .orderBy(asc(users.createdAt), asc(users.id))
    .limit(limit + 1);
  return c.json(UserPageSchema.parse(await toPage(c.env.SECRET_KEY, list, rows, limit, presentUser)), 200);
};
