import { type RouteHandler, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { keyringOf } from "../../lib/crypto/keyring";
import { cursorQuery, pageBody, pageSchema } from "../../schemas/page";
import { presentEndpoint, WebhookEndpointSchema } from "../../schemas/webhooks";
import { pageEndpoints } from "../../webhooks/endpoints/records";

const EndpointPageSchema = pageSchema(WebhookEndpointSchema, "WebhookEndpointPage");

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
      200: { description: "A page of endpoints.", content: json(EndpointPageSchema) },
    },
  },
);

export const listEndpointsHandler: RouteHandler<typeof listEndpointsRoute, AppEnv> = async (c) => {
  const { cursor, limit } = c.req.valid("query");
  const page = await pageEndpoints(c.var.db, c.get("caller").agencyId, {
    keyring: keyringOf(c.env),
    cursor,
    limit,
  });
  return c.json(EndpointPageSchema.parse(pageBody(page, presentEndpoint)), 200);
};
