import { type RouteHandler, z } from "@hono/zod-openapi";
import { liveSessions, SESSION_LIST_LIMIT } from "../../domain/people/sessions";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { userIdParam } from "./schema";

const LiveSessionSchema = z
  .object({
    session_id: z.string().openapi({
      description: "The session's id (the SHA-256 of its token, in hex): revoke it with revokeSession.",
      example: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    }),
    created_at: z.string().openapi({ example: "2026-11-27T08:00:00.000Z" }),
    expires_at: z.string().openapi({ example: "2026-11-27T20:00:00.000Z" }),
  })
  .openapi("LiveSession");

export const listUserSessionsRoute = internalRoute(["user_not_found"], {
  method: "get",
  path: "/internal/v1/users/{user_id}/sessions",
  operationId: "listUserSessions",
  tags: ["Sessions"],
  summary: "A user's live dashboard sessions",
  description:
    `The user's sessions that are neither revoked nor expired, newest first, at most ${SESSION_LIST_LIMIT} ` +
    "(`has_more` when there are others). Tokens are never shown: only their ids.",
  request: { params: userIdParam },
  responses: {
    200: {
      description: "The live sessions.",
      content: json(
        z
          .object({
            data: z.array(LiveSessionSchema),
            has_more: z.boolean().openapi({ description: `More than ${SESSION_LIST_LIMIT} are live.` }),
          })
          .openapi("LiveSessions"),
      ),
    },
  },
});

export const listUserSessionsHandler: RouteHandler<typeof listUserSessionsRoute, AppEnv> = async (c) => {
  const { sessions, more } = await liveSessions(c.var.db, c.req.valid("param").user_id);
  return c.json(
    {
      data: sessions.map((s) => ({ session_id: s.sessionId, created_at: s.createdAt, expires_at: s.expiresAt })),
      has_more: more,
    },
    200,
  );
};
