import { type RouteHandler, z } from "@hono/zod-openapi";
import { createUser } from "../../domain/people/hierarchy";
import { ROLES } from "../../domain/roles";
import type { AppEnv } from "../../http/env";
import { created, internalRoute, json, setLocation } from "../../http/route";
import { withRenames } from "../../http/validation";
import { InternalUserSchema, presentInternalUser } from "./schema";

export const createUserRoute = internalRoute(
  ["agency_not_found", "manager_not_found", "invalid_role", "user_email_taken", "agency_quota_exceeded"],
  {
    method: "post",
    path: "/internal/v1/users",
    operationId: "createUser",
    tags: ["Users"],
    summary: "Provision a user under a manager, or at the top of an agency",
    description:
      "With `manager_id` the user joins the manager's agency. Without it, `agency_id` is required and the role " +
      "must be media_agency or broker (or a platform role in the platform agency). Emits `user.signed_up`. " +
      "Emails are unique within an agency (409 `user_email_taken`); another agency may have the same one.",
    request: {
      body: {
        // The user record spells the manager `managerId`; a request must say `manager_id`.
        content: json(
          withRenames(
            z.strictObject({
              agency_id: z.string().optional(),
              manager_id: z.string().nullable().optional(),
              role: z.enum(ROLES).openapi({ example: "agent" }),
              name: z.string().min(1).max(200),
              email: z.email(),
              source: z.enum(["admin_create", "invite"]).optional(),
            }),
            { managerId: "manager_id" },
          ),
        ),
      },
    },
    responses: created("The user.", InternalUserSchema, "/internal/v1/users/usr_0mhx3k2a1q8v2l0c9z7rj4"),
  },
);

export const createUserHandler: RouteHandler<typeof createUserRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const user = await createUser(c.var.db, {
    agencyId: b.agency_id,
    managerId: b.manager_id,
    role: b.role,
    name: b.name,
    email: b.email,
    source: b.source,
  });
  setLocation(c, `/internal/v1/users/${user.id}`);
  return c.json(presentInternalUser(user), 201);
};
