import { type RouteHandler, z } from "@hono/zod-openapi";
import { and, asc, eq } from "drizzle-orm";
import { database } from "../../db/client";
import { webhookEndpoints } from "../../db/schema";
import type { AppEnv } from "../../http/env";
import { after, cursorQuery, decodeCursor, pageSchema, toPage } from "../../http/pagination";
import { publicRoute } from "../../http/route";
import { presentEndpoint, WebhookEndpointSchema } from "../../schemas/webhooks";

export const EndpointPageSchema = pageSchema(WebhookEndpointSchema, "WebhookEndpointPage");

export const listEndpointsRoute = publicRoute(
  { endpoint: "read_webhook_endpoints", scope: "webhooks:read" },
  {
    method: "get",
    path: "/api/v1/webhooks/endpoints",
    operationId: "listWebhookEndpoints",
    tags: ["Webhooks"],
    summary: "List your webhook receivers",
    description: "A cursor page of your agency's receivers, oldest first. Signing secrets are never shown again.",
    request: { query: z.strictObject(cursorQuery) },
    responses: {
      200: { description: "A page of endpoints.", content: { "application/json": { schema: EndpointPageSchema } } },
    },
  },
);

export const listEndpointsHandler: RouteHandler<typeof listEndpointsRoute, AppEnv> = async (c) => {
  const { cursor, limit } = c.req.valid("query");
  const { agencyId } = c.get("caller");
  const list = `webhook-endpoints:${agencyId}`;
  const at = await decodeCursor(c.env.SECRET_KEY, list, cursor);
  const rows = await database(c.env.DB)
    .select()
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.agencyId, agencyId), after(webhookEndpoints.createdAt, webhookEndpoints.id, at)))
    .orderBy(asc(webhookEndpoints.createdAt), asc(webhookEndpoints.id))
    .limit(limit + 1);
  return c.json(EndpointPageSchema.parse(await toPage(c.env.SECRET_KEY, list, rows, limit, presentEndpoint)), 200);
};
