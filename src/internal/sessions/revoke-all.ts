import { type RouteHandler, z } from "@hono/zod-openapi";
import { revokeUserSessions } from "../../domain/people/sessions";
import { SESSION_COOKIE } from "../../http/admission/session-auth";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { userIdParam } from "./schema";

export const revokeUserSessionsRoute = internalRoute(["user_not_found"], {
  method: "post",
  path: "/internal/v1/users/{user_id}/sessions/revoke",
  operationId: "revokeUserSessions",
  tags: ["Sessions"],
  summary: "Sign a user out everywhere",
  description:
    `Revokes every live session of the user at once: from the next request each of their cookies ` +
    `(\`${SESSION_COOKIE}\`) is refused with 401 \`auth_required\`. Answers how many were live; again, 0.`,
  request: { params: userIdParam },
  responses: {
    200: {
      description: "How many live sessions were revoked.",
      content: json(
        z
          .object({ revoked: z.number().int().openapi({ description: "Sessions revoked now.", example: 3 }) })
          .openapi("SessionsRevoked"),
      ),
    },
  },
});

export const revokeUserSessionsHandler: RouteHandler<typeof revokeUserSessionsRoute, AppEnv> = async (c) =>
  c.json({ revoked: await revokeUserSessions(c.var.db, c.req.valid("param").user_id) }, 200);
