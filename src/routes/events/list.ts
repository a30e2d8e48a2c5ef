import { type RouteHandler, z } from "@hono/zod-openapi";
import { checkEventTypesReadable, readableEventTypes } from "../../domain/event-access";
import { EVENT_RETENTION_DAYS, eventWindow, pageEvents } from "../../domain/event-log";
import { EVENT_TYPE_NAMES } from "../../domain/events";
import { json } from "../../http/content";
import type { AppEnv } from "../../http/env";
import { publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/keyring";
import { EventSchema, presentEvent } from "../../schemas/event-log";
import { READ_SCOPES_TEXT } from "../../schemas/events";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";

const EventPageSchema = pageSchema(EventSchema, "EventPage");

const instant = (description: string) =>
  z.iso
    .datetime({ offset: true })
    .optional()
    .openapi({
      description: `${description} An ISO 8601 instant with \`Z\` or an offset.`,
      example: "2026-11-22T00:00:00Z",
    });

export const listEventsRoute = publicRoute(
  { endpoint: "read_events_list", scope: "webhooks:read" },
  {
    method: "get",
    path: "/api/v1/events",
    operationId: "listEvents",
    tags: ["Events"],
    summary: "List your agency's events",
    description:
      `A cursor page of your agency's events of the last ${EVENT_RETENTION_DAYS} days, oldest first, whether or not ` +
      "an endpoint was subscribed to them: reconcile what your receivers got (by `event_id`) and fetch what they " +
      "missed. Only the types your key may read are listed: each needs the scope that guards its data elsewhere, " +
      `${READ_SCOPES_TEXT} (the catalog names each type's \`read_scope\`); a \`type\` your key may not read is ` +
      "403 `auth.scope_denied` naming the missing scope. Each item is the envelope its webhook deliveries carry, " +
      "with the event's `created_at` in place of " +
      `the per-attempt \`timestamp\` and \`nonce\`. Events older than ${EVENT_RETENTION_DAYS} days are not ` +
      "listed (a `created_after` before that starts at the horizon) and are deleted. A `type` that is not one of " +
      "the catalog's event types, a malformed instant, or a `created_before` not later than `created_after` is " +
      "422 `request_query_invalid`.",
    request: {
      query: z.strictObject({
        ...cursorQuery,
        type: z
          .enum(EVENT_TYPE_NAMES)
          .optional()
          .openapi({ description: "Only events of this type.", example: "listing.created" }),
        created_after: instant("Only events created at or after this instant (inclusive)."),
        created_before: instant("Only events created strictly before this instant (exclusive)."),
      }),
    },
    responses: {
      200: { description: "A page of events.", content: json(EventPageSchema) },
    },
  },
);

export const listEventsHandler: RouteHandler<typeof listEventsRoute, AppEnv> = async (c) => {
  const { cursor, limit, type, created_after, created_before } = c.req.valid("query");
  const caller = c.get("caller");
  if (type) checkEventTypesReadable(caller.scopes, [type]);
  const page = await pageEvents(
    c.var.db,
    caller.agencyId,
    { readable: readableEventTypes(caller.scopes), type, ...eventWindow(created_after, created_before) },
    { keyring: keyringOf(c.env), cursor, limit },
  );
  return c.json(pageBody(page, presentEvent), 200);
};
