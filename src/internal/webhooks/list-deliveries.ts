import { type RouteHandler, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { cursorQuery, pageSchema } from "../../schemas/page";
import { pageDeliveries } from "../../webhooks/agency-deliveries";
import { attemptsOf } from "../../webhooks/delivery/attempt-history";
import { DeliverySchema, presentDeliveries } from "./schema";

export const listWebhookDeliveriesRoute = internalRoute([], {
  method: "get",
  path: "/internal/v1/agencies/{agency_id}/webhook-deliveries",
  operationId: "listWebhookDeliveries",
  tags: ["Webhooks"],
  summary: "List an agency's webhook deliveries with every attempt",
  request: {
    params: z.object({ agency_id: z.string() }),
    query: z.strictObject({
      ...cursorQuery,
      status: z.enum(["pending", "delivered", "dead", "filtered"]).optional(),
      event_id: z.string().optional(),
    }),
  },
  responses: {
    200: {
      description: "A page of deliveries.",
      content: json(pageSchema(DeliverySchema, "WebhookDeliveryPage")),
    },
  },
});

export const listWebhookDeliveriesHandler: RouteHandler<typeof listWebhookDeliveriesRoute, AppEnv> = async (c) => {
  const { agency_id } = c.req.valid("param");
  const { cursor, limit, status, event_id } = c.req.valid("query");
  const db = c.var.db;
  const page = await pageDeliveries(
    db,
    agency_id,
    { status, eventId: event_id },
    { keyring: keyringOf(c.env), cursor, limit },
  );
  const attempts = await attemptsOf(
    db,
    page.rows.map((r) => r.id),
  );
  return c.json({ data: presentDeliveries(page.rows, attempts), next_cursor: page.nextCursor }, 200);
};
