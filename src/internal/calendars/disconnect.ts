import type { RouteHandler } from "@hono/zod-openapi";
import { disconnectCalendar } from "../../calendar/connections";
import { getUserById } from "../../domain/people/hierarchy";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { userParam } from "./schema";

export const disconnectCalendarRoute = internalRoute(["user_not_found"], {
  method: "delete",
  path: "/internal/v1/users/{user_id}/calendar",
  operationId: "disconnectCalendar",
  tags: ["Calendars"],
  summary: "Disconnect a user's calendar",
  request: { params: userParam },
  responses: { 204: { description: "Disconnected." } },
});

export const disconnectCalendarHandler: RouteHandler<typeof disconnectCalendarRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const user = await getUserById(db, c.req.valid("param").user_id);
  await disconnectCalendar(db, user.id);
  return c.body(null, 204);
};
