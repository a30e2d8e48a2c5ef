import { type RouteHandler, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { endpointIdParam } from "../../schemas/webhooks";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { sendTestEvent } from "../../webhooks/test-event";

const TestResultSchema = z
  .object({
    delivered: z
      .boolean()
      .openapi({ description: "True when the receiver answered 2xx within 10 seconds.", example: true }),
    event_id: z.string().openapi({ example: "evt_test_0mhx3k2a1q8v2l0c9z7rj4" }),
    response_status: z.number().int().nullable().openapi({ example: 200 }),
    latency_ms: z.number().int().openapi({ example: 84 }),
    error: z.string().nullable().openapi({ example: null }),
  })
  .openapi("WebhookTestResult");

export const testEndpointRoute = publicRoute(
  {
    endpoint: "manage_webhook_endpoints",
    scope: "webhooks:write",
    roles: ["super_admin", "admin", "media_agency", "broker", "team_lead"],
    errors: ["webhook_endpoint_not_found", "webhook_url_not_allowed"],
  },
  {
    method: "post",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}/test",
    operationId: "testWebhookEndpoint",
    tags: ["Webhooks"],
    summary: "Send a signed test event to a receiver",
    description:
      "Sends one `webhook.test` event now, signed like every delivery (`X-Webhook-Event: webhook.test`; `data` " +
      "holds `endpoint_id` and `message`), and answers what the receiver said. Not retried, not recorded as a " +
      "delivery; use it to check your verifier.",
    request: { params: endpointIdParam },
    responses: {
      200: { description: "The receiver's answer.", content: json(TestResultSchema) },
    },
  },
);

export const testEndpointHandler: RouteHandler<typeof testEndpointRoute, AppEnv> = async (c) => {
  const endpoint = await findEndpoint(c.var.db, c.get("caller").agencyId, c.req.valid("param").endpoint_id);
  return c.json(TestResultSchema.parse(await sendTestEvent(c.env, endpoint)), 200);
};
