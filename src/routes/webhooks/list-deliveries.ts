import { type RouteHandler, z } from "@hono/zod-openapi";
import { readableEventTypes } from "../../domain/events/access";
import { EVENT_RETENTION_DAYS } from "../../domain/events/log";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { DeliveryLogEntrySchema, presentDeliveryLogEntry } from "../../schemas/delivery-log";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";
import { endpointIdParam } from "../../schemas/webhooks";
import { pageDeliveryLog } from "../../webhooks/endpoints/delivery-log";
import { findEndpoint } from "../../webhooks/endpoints/records";

const DeliveryLogPageSchema = pageSchema(DeliveryLogEntrySchema, "WebhookDeliveryPage");

export const listDeliveriesRoute = publicRoute(
  { endpoint: "read_webhook_deliveries", scope: "webhooks:read", errors: ["webhook_endpoint_not_found"] },
  {
    method: "get",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}/deliveries",
    operationId: "listWebhookDeliveries",
    tags: ["Webhooks"],
    summary: "The delivery log of a webhook receiver",
    description:
      "A cursor page of this endpoint's deliveries, oldest first, each with its status, every attempt (status " +
      "code, latency, error) and, while pending, when the next retry is due. Read-only: a dead delivery is " +
      "replayed from the dashboard, and the replay shows here as the delivery turning `pending` again, then as a " +
      `new attempt. Kept ${EVENT_RETENTION_DAYS} days after a delivery's last attempt; a pending delivery is ` +
      "always shown. Only deliveries of events your key may read (their types' read scopes) are listed. Another " +
      "agency's endpoint, or a removed one, answers 404 `webhook_endpoint_not_found`.",
    request: {
      params: endpointIdParam,
      query: z.strictObject({
        ...cursorQuery,
        status: z
          .enum(["pending", "delivered", "dead", "filtered"])
          .optional()
          .openapi({ description: "Only deliveries with this status.", example: "dead" }),
        event_id: z
          .string()
          .max(100)
          .optional()
          .openapi({ description: "Only the delivery of this event.", example: "evt_0mhx3k2a1q8v2l0c9z7rj4" }),
      }),
    },
    responses: {
      200: {
        description: "A page of deliveries.",
        content: json(DeliveryLogPageSchema),
      },
    },
  },
);

export const listDeliveriesHandler: RouteHandler<typeof listDeliveriesRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const endpoint = await findEndpoint(db, c.get("caller").agencyId, c.req.valid("param").endpoint_id);
  const { cursor, limit, status, event_id } = c.req.valid("query");
  const page = await pageDeliveryLog(
    db,
    endpoint,
    { status, eventId: event_id, eventTypes: readableEventTypes(c.get("caller").scopes) },
    { keyring: keyringOf(c.env), cursor, limit },
  );
  return c.json(DeliveryLogPageSchema.parse(pageBody(page, presentDeliveryLogEntry)), 200);
};
