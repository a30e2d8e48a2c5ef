import type { RouteHandler } from "@hono/zod-openapi";
import { EVENT_RETENTION_DAYS, findEvent } from "../../domain/event-log";
import { json } from "../../http/content";
import type { AppEnv } from "../../http/env";
import { publicRoute } from "../../http/route";
import { EventSchema, eventIdParam, presentEvent } from "../../schemas/event-log";

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
      `${EVENT_RETENTION_DAYS} days, another agency's event, or an unknown id answers 404 \`event_not_found\`.`,
    request: { params: eventIdParam },
    responses: { 200: { description: "The event.", content: json(EventSchema) } },
  },
);

export const getEventHandler: RouteHandler<typeof getEventRoute, AppEnv> = async (c) => {
  const event = await findEvent(c.var.db, c.get("caller").agencyId, c.req.valid("param").event_id);
  return c.json(presentEvent(event), 200);
};
