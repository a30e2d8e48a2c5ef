import { type RouteHandler, z } from "@hono/zod-openapi";
import { createSession, SESSION_MAX_TTL_MINUTES } from "../../domain/people/sessions";
import { SESSION_COOKIE } from "../../http/admission/session-auth";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";

export const createSessionRoute = internalRoute(["user_not_found"], {
  method: "post",
  path: "/internal/v1/sessions",
  operationId: "createSession",
  tags: ["Sessions"],
  summary: "Create a dashboard session for a user",
  description:
    `The dashboard signs users in elsewhere and calls this to obtain the session cookie (\`${SESSION_COOKIE}\`), ` +
    "which POST /api/v1/media/upload accepts.",
  request: {
    body: {
      content: json(
        z.strictObject({
          user_id: z.string(),
          ttl_minutes: z
            .number()
            .int()
            .min(1)
            .max(SESSION_MAX_TTL_MINUTES)
            .optional()
            .openapi({ description: "How long the session lives: 12 hours by default, a day at most.", example: 720 }),
        }),
      ),
    },
  },
  responses: {
    201: {
      description: "The session token (shown once) and a ready Set-Cookie value.",
      content: json(
        z
          .object({
            cookie_name: z.string(),
            token: z.string(),
            session_id: z.string().openapi({
              description: "The session's id (the SHA-256 of the token, in hex), to revoke it with DELETE.",
            }),
            expires_at: z.string(),
            set_cookie: z.string(),
          })
          .openapi("DashboardSession"),
      ),
    },
  },
});

export const createSessionHandler: RouteHandler<typeof createSessionRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const { token, sessionId, expiresAt } = await createSession(
    c.var.db,
    b.user_id,
    b.ttl_minutes ? b.ttl_minutes * 60_000 : undefined,
  );
  const expires = new Date(expiresAt).toUTCString();
  const setCookie = `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; Secure; SameSite=Lax; Expires=${expires}`;
  return c.json(
    { cookie_name: SESSION_COOKIE, token, session_id: sessionId, expires_at: expiresAt, set_cookie: setCookie },
    201,
  );
};
