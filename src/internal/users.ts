import { OpenAPIHono, z } from "@hono/zod-openapi";
import { database } from "../db/client";
import type { User } from "../db/schema";
import { changeManager, createUser, deactivateUser, getUserById } from "../domain/hierarchy";
import { ROLES } from "../domain/roles";
import { pageAgencyUsers } from "../domain/users";
import { refreshKeysMintedBy } from "../durable/key-changes";
import type { AppEnv } from "../http/env";
import { internalRoute } from "../http/route";
import { validationHook, withRenames } from "../http/validation";
import { cursorQuery, pageBody, pageSchema } from "../schemas/page";
import { presentUser, UserSchema } from "../schemas/users";

const InternalUserSchema = UserSchema.extend({
  agency_id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
}).openapi("InternalUser");
const present = (u: User) => ({ ...presentUser(u), agency_id: u.agencyId });
const userResponse = (description: string, status: 200 | 201 = 200) =>
  ({ [status]: { description, content: { "application/json": { schema: InternalUserSchema } } } }) as const;
const userParam = z.object({ user_id: z.string() });

const create = internalRoute(["agency_not_found", "manager_not_found", "invalid_role", "user_email_taken"], {
  method: "post",
  path: "/internal/v1/users",
  operationId: "createUser",
  tags: ["Users"],
  summary: "Provision a user under a manager, or at the top of an agency",
  description:
    "With `manager_id` the user joins the manager's agency. Without it, `agency_id` is required and the role must be media_agency or broker (or a platform role in the platform agency). Emits `user.signed_up`.",
  request: {
    body: {
      content: {
        "application/json": {
          // The user record spells the manager `managerId`; a request must say `manager_id`.
          schema: withRenames(
            z.strictObject({
              agency_id: z.string().optional(),
              manager_id: z.string().nullable().optional(),
              role: z.enum(ROLES),
              name: z.string().min(1).max(200),
              email: z.email(),
              source: z.enum(["admin_create", "invite"]).optional(),
            }),
            { managerId: "manager_id" },
          ),
        },
      },
    },
  },
  responses: { 201: { description: "The user.", content: { "application/json": { schema: InternalUserSchema } } } },
});

const list = internalRoute([], {
  method: "get",
  path: "/internal/v1/users",
  operationId: "listUsers",
  tags: ["Users"],
  summary: "List an agency's users, oldest first",
  request: { query: z.strictObject({ ...cursorQuery, agency_id: z.string() }) },
  responses: {
    200: {
      description: "A page of users.",
      content: { "application/json": { schema: pageSchema(InternalUserSchema, "InternalUserPage") } },
    },
  },
});

const get = internalRoute(["user_not_found"], {
  method: "get",
  path: "/internal/v1/users/{user_id}",
  operationId: "getUser",
  tags: ["Users"],
  summary: "Get any user",
  request: { params: userParam },
  responses: userResponse("The user."),
});

const setManager = internalRoute(["user_not_found", "manager_not_found", "hierarchy_cycle", "invalid_role"], {
  method: "patch",
  path: "/internal/v1/users/{user_id}/manager",
  operationId: "changeManager",
  tags: ["Users"],
  summary: "Change a user's manager, inside the agency or across agencies",
  description:
    "The user's whole subtree follows it into the manager's agency. Emits `user.hierarchy_changed` to the new " +
    "owning agency. API keys minted by a user who leaves the key's agency (the user or anyone in the subtree) are " +
    "refused from the very next request with 401 `api_key_disabled` (`details.reason`: `minting_user_moved`).",
  request: {
    params: userParam,
    body: {
      content: {
        "application/json": {
          schema: withRenames(z.strictObject({ manager_id: z.string().nullable() }), { managerId: "manager_id" }),
        },
      },
    },
  },
  responses: userResponse("The moved user."),
});

const deactivate = internalRoute(["user_not_found"], {
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
      content: {
        "application/json": { schema: z.strictObject({ reason: z.enum(["deactivated", "suspended"]).optional() }) },
      },
    },
  },
  responses: userResponse("The deactivated user."),
});

export const usersInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(create, async (c) => {
    const b = c.req.valid("json");
    const user = await createUser(database(c.env.DB), {
      agencyId: b.agency_id,
      managerId: b.manager_id,
      role: b.role,
      name: b.name,
      email: b.email,
      source: b.source,
    });
    return c.json(present(user), 201);
  })
  .openapi(list, async (c) => {
    const { cursor, limit, agency_id } = c.req.valid("query");
    const page = await pageAgencyUsers(database(c.env.DB), agency_id, { secret: c.env.SECRET_KEY, cursor, limit });
    return c.json(pageBody(page, present), 200);
  })
  .openapi(get, async (c) => c.json(present(await getUserById(database(c.env.DB), c.req.valid("param").user_id)), 200))
  // The keys' gates are told even when nothing changed, so repeating a call whose
  // notice was cut short completes it.
  .openapi(setManager, async (c) => {
    const moved = await changeManager(database(c.env.DB), c.req.valid("param").user_id, c.req.valid("json").manager_id);
    await refreshKeysMintedBy(c.env, moved.id, { subtree: true });
    return c.json(present(moved), 200);
  })
  .openapi(deactivate, async (c) => {
    const user = await deactivateUser(database(c.env.DB), c.req.valid("param").user_id, c.req.valid("json").reason);
    await refreshKeysMintedBy(c.env, user.id, { subtree: false });
    return c.json(present(user), 200);
  });
