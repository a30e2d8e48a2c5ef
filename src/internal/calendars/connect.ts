import { type RouteHandler, z } from "@hono/zod-openapi";
import { connectCalendar } from "../../calendar/connections";
import { getUserById } from "../../domain/people/hierarchy";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { userParam } from "./schema";

const ConnectionSchema = z
  .object({
    id: z.string(),
    user_id: z.string(),
    provider: z.enum(["google", "ics", "sandbox"]),
    calendar_id: z.string().nullable(),
    updated_at: z.string(),
  })
  .openapi("CalendarConnection");

export const connectCalendarRoute = internalRoute(["user_not_found", "calendar_feed_not_allowed"], {
  method: "put",
  path: "/internal/v1/users/{user_id}/calendar",
  operationId: "connectCalendar",
  tags: ["Calendars"],
  summary: "Connect (or replace) a user's external calendar",
  description:
    "Google Calendar (OAuth tokens; refreshed with GOOGLE_CLIENT_SECRET when expired) or an ICS feed URL. " +
    "Credentials are stored sealed and never returned. " +
    "The connection also answers for everyone below the user in the hierarchy who has none. It belongs to the " +
    "user's agency: it is removed when the user moves to another agency.",
  request: {
    params: userParam,
    body: {
      content: json(
        z.discriminatedUnion("provider", [
          z.strictObject({
            provider: z.literal("google"),
            calendar_id: z.string().min(1).max(300),
            client_id: z.string().min(1),
            refresh_token: z.string().min(1),
            access_token: z.string().optional(),
            access_token_expires_at: z.iso.datetime({ offset: true }).optional(),
          }),
          z.strictObject({
            provider: z.literal("ics"),
            feed_url: z
              .url({ protocol: /^https?$/ })
              .max(2048)
              .openapi({
                description:
                  "A public https feed (the receiver policy; http to this machine only in local development).",
              }),
          }),
        ]),
      ),
    },
  },
  responses: {
    200: {
      description: "The connection (without credentials).",
      content: json(ConnectionSchema),
    },
  },
});

export const connectCalendarHandler: RouteHandler<typeof connectCalendarRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const user = await getUserById(db, c.req.valid("param").user_id);
  const b = c.req.valid("json");
  const conn = await connectCalendar(
    db,
    keyringOf(c.env),
    user,
    b.provider === "ics"
      ? { provider: "ics", feedUrl: b.feed_url }
      : {
          provider: "google",
          calendarId: b.calendar_id,
          credentials: {
            client_id: b.client_id,
            refresh_token: b.refresh_token,
            access_token: b.access_token,
            access_token_expires_at: b.access_token_expires_at ? Date.parse(b.access_token_expires_at) : undefined,
          },
        },
    { allowLocalHttp: c.env.ALLOW_HTTP_RECEIVERS === "true" },
  );
  return c.json(
    {
      id: conn.id,
      user_id: conn.userId,
      provider: conn.provider,
      calendar_id: conn.calendarId,
      updated_at: conn.updatedAt,
    },
    200,
  );
};
