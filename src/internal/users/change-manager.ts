import { type RouteHandler, z } from "@hono/zod-openapi";
import { moveUser } from "../../accounts/people";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { withRenames } from "../../http/validation";
import { presentInternalUser, userParam, userResponse } from "./schema";

export const changeManagerRoute = internalRoute(
  ["user_not_found", "manager_not_found", "hierarchy_cycle", "invalid_role", "user_email_taken"],
  {
    method: "patch",
    path: "/internal/v1/users/{user_id}/manager",
    operationId: "changeManager",
    tags: ["Users"],
    summary: "Change a user's manager, inside the agency or across agencies",
    description:
      "The user's whole subtree follows it into the manager's agency. Emits `user.hierarchy_changed` to the new " +
      "owning agency only; across agencies its `previous_manager_id` is null, so it names no user of the old " +
      "agency. Leaving an agency, the movers leave behind what they had there, in the same write: the storage " +
      "destinations and calendar connections they set up in it are removed (their credentials were given for that " +
      "agency; they set them up again in the new one), and each of its listings that names one of them passes " +
      "`owner_user_id` and `agent_one_id` to the nearest active manager they left behind (else the agency's " +
      "first active owner) and clears `agent_two_id`, with `listing.updated` to the old agency. " +
      "API keys minted by a user who leaves the key's agency (the user or anyone in the subtree) are " +
      "refused from the very next request with 401 `api_key_disabled` (`details.reason`: `minting_user_moved`). " +
      "Emails are unique within an agency: a move that would bring a second user with the same email into the " +
      "manager's agency is 409 `user_email_taken` and moves no one.",
    request: {
      params: userParam,
      body: {
        content: json(withRenames(z.strictObject({ manager_id: z.string().nullable() }), { managerId: "manager_id" })),
      },
    },
    responses: userResponse("The moved user."),
  },
);

export const changeManagerHandler: RouteHandler<typeof changeManagerRoute, AppEnv> = async (c) => {
  const moved = await moveUser(c.env, c.var.db, c.req.valid("param").user_id, c.req.valid("json").manager_id);
  return c.json(presentInternalUser(moved), 200);
};
