import { type RouteHandler, z } from "@hono/zod-openapi";
import { createUser } from "../../domain/people/hierarchy";
import { activeUserOfAgency } from "../../domain/people/users";
import { AGENCY_ROLES } from "../../domain/roles";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { created, json, publicRoute, setLocation } from "../../http/route";
import { randomAlnum } from "../../lib/ids";
import { presentUser, UserSchema } from "../../schemas/users";
import { outsideHelperGuard, TEST_HELPERS_TAG } from "./schema";

export const createUserRoute = publicRoute(
  outsideHelperGuard("users:read", ["user_not_found", "user_email_taken", "agency_quota_exceeded"]),
  {
    method: "post",
    path: "/api/v1/test_helpers/users",
    operationId: "testHelperCreateUser",
    tags: [TEST_HELPERS_TAG],
    summary: "Provision a user under a manager (emits user.signed_up)",
    description:
      "What the dashboard does when a user is provisioned (admin create or invite): the user joins your agency " +
      "under `manager_id`, an active user of your agency (404 `user_not_found` otherwise), and `user.signed_up` " +
      "is emitted. Emails are unique within your agency (409 `user_email_taken` when one of your users has it); " +
      "whether another agency has the same email never changes the answer. One is minted when omitted.",
    request: {
      body: {
        content: json(
          z.strictObject({
            manager_id: z
              .string()
              .max(64)
              .openapi({ description: "The new user's manager.", example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
            role: z
              .enum(AGENCY_ROLES)
              .default("agent")
              .openapi({ description: "Role in the hierarchy; `agent` when omitted.", example: "agent" }),
            name: z.string().trim().min(1).max(200).default("Sandbox User").openapi({ example: "Priya Natarajan" }),
            email: z
              .email()
              .max(254)
              .optional()
              .openapi({ description: "Minted (`…@sandbox.invalid`) when omitted.", example: "priya@example.com" }),
            source: z
              .enum(["admin_create", "invite"])
              .default("admin_create")
              .openapi({ description: "How the user was provisioned (`data.source`).", example: "invite" }),
          }),
        ),
      },
    },
    responses: created("The user.", UserSchema, "/api/v1/users/usr_0mhx3k2a1q8v2l0c9z7rj4"),
  },
);

export const createUserHandler: RouteHandler<typeof createUserRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const b = c.req.valid("json");
  const manager = await activeUserOfAgency(db, c.get("caller").agencyId, b.manager_id);
  const user = await createUser(
    db,
    {
      agencyId: manager.agencyId,
      managerId: manager.id,
      role: b.role,
      name: b.name,
      email: b.email ?? `user-${randomAlnum(12)}@sandbox.invalid`,
      source: b.source,
    },
    ({ id }) => idempotencyMark(c, db, { status: 201, resourceType: "user", resourceId: id }),
  );
  setLocation(c, `/api/v1/users/${user.id}`);
  return c.json(UserSchema.parse(presentUser(user)), 201);
};
