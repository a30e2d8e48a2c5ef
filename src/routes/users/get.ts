import type { RouteHandler } from "@hono/zod-openapi";
import { z } from "@hono/zod-openapi";
import { userOfAgency, userVersion } from "../../domain/people/users";
import { setEtag } from "../../http/admission/conditional";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentUser, UserSchema } from "../../schemas/users";

export const getUserRoute = publicRoute(
  {
    endpoint: "read_user_single",
    scope: "users:read",
    conditional: "read",
    currentVersion: (db, agencyId, param) => userVersion(db, agencyId, param("user_id") ?? ""),
    errors: ["user_not_found"],
  },
  {
    method: "get",
    path: "/api/v1/users/{user_id}",
    operationId: "getUser",
    tags: ["Users"],
    summary: "Get one user",
    description:
      "A user of your agency hierarchy. A user of another agency answers 404 `user_not_found`, exactly like an " +
      "unknown id.",
    request: { params: z.object({ user_id: z.string().openapi({ example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }) }) },
    responses: { 200: { description: "The user.", content: json(UserSchema) } },
  },
);

export const getUser: RouteHandler<typeof getUserRoute, AppEnv> = async (c) => {
  const user = await userOfAgency(c.var.db, c.get("caller").agencyId, c.req.valid("param").user_id);
  setEtag(c, user.version);
  return c.json(UserSchema.parse(presentUser(user)), 200);
};
