import type { RouteHandler } from "@hono/zod-openapi";
import { checkEventTypesReadable } from "../../domain/events/access";
import type { EventType } from "../../domain/events/catalog";
import { EVENT_RETENTION_DAYS, findEvent } from "../../domain/events/log";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { EventSchema, eventIdParam, presentEvent } from "../../schemas/event-log";
import { READ_SCOPES_TEXT } from "../../schemas/events";

export const getEventRoute = publicRoute(
  { endpoint: "read_event_single", scope: "webhooks:read", errors: ["event_not_found"] },
  {
    method: "get",
    path: "/api/v1/events/{event_id}",
    operationId: "getEvent",
    tags: ["Events"],
    summary: "Get an event",
    description:
      "One event of your agency, by the `event_id` of its deliveries: the envelope they carry, with the event's " +
      `\`created_at\` in place of the per-attempt \`timestamp\` and \`nonce\`. An event older than ` +
      `${EVENT_RETENTION_DAYS} days, another agency's event, or an unknown id answers 404 \`event_not_found\`. ` +
      "An event of a type your key may not read is 403 `auth.scope_denied` naming the missing scope: " +
      `${READ_SCOPES_TEXT}.`,
    request: { params: eventIdParam },
    responses: { 200: { description: "The event.", content: json(EventSchema) } },
  },
);

export const getEventHandler: RouteHandler<typeof getEventRoute, AppEnv> = async (c) => {
  const caller = c.get("caller");
  const event = await findEvent(c.var.db, caller.agencyId, c.req.valid("param").event_id);
  checkEventTypesReadable(caller.scopes, [event.eventType as EventType]);
  return c.json(presentEvent(event), 200);
};
