import { type RouteHandler, z } from "@hono/zod-openapi";
import { pageAgencyUsers } from "../../domain/people/users";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";
import { InternalUserSchema, presentInternalUser } from "./schema";

export const listUsersRoute = internalRoute([], {
  method: "get",
  path: "/internal/v1/users",
  operationId: "listUsers",
  tags: ["Users"],
  summary: "List an agency's users, oldest first",
  request: { query: z.strictObject({ ...cursorQuery, agency_id: z.string() }) },
  responses: {
    200: {
      description: "A page of users.",
      content: json(pageSchema(InternalUserSchema, "InternalUserPage")),
    },
  },
});

export const listUsersHandler: RouteHandler<typeof listUsersRoute, AppEnv> = async (c) => {
  const { cursor, limit, agency_id } = c.req.valid("query");
  const page = await pageAgencyUsers(c.var.db, agency_id, { keyring: keyringOf(c.env), cursor, limit });
  return c.json(pageBody(page, presentInternalUser), 200);
};
