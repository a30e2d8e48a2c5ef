import { type RouteHandler, z } from "@hono/zod-openapi";
import { revokeSession } from "../../domain/people/sessions";
import { SESSION_COOKIE } from "../../http/admission/session-auth";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";

export const revokeSessionRoute = internalRoute([], {
  method: "delete",
  path: "/internal/v1/sessions/{session_id}",
  operationId: "revokeSession",
  tags: ["Sessions"],
  summary: "Revoke a dashboard session",
  description:
    `From the next request, the session's cookie (\`${SESSION_COOKIE}\`) is refused with 401 \`auth_required\`. ` +
    "Revoked and expired sessions are deleted by the nightly purge. Revoking an unknown or already revoked " +
    "session is answered 204 as well and changes nothing.",
  request: {
    params: z.object({
      session_id: z.string().openapi({
        description: "The `session_id` that creating the session answered (the SHA-256 of its token, in hex).",
        example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
      }),
    }),
  },
  responses: { 204: { description: "Revoked." } },
});

export const revokeSessionHandler: RouteHandler<typeof revokeSessionRoute, AppEnv> = async (c) => {
  await revokeSession(c.var.db, c.req.valid("param").session_id);
  return c.body(null, 204);
};
