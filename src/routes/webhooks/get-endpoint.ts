import type { RouteHandler } from "@hono/zod-openapi";
import { setEtag } from "../../http/admission/conditional";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { endpointIdParam, presentEndpoint, WebhookEndpointSchema } from "../../schemas/webhooks";
import { endpointVersion, findEndpoint } from "../../webhooks/endpoints/records";

export const getEndpointRoute = publicRoute(
  {
    endpoint: "read_webhook_endpoints",
    scope: "webhooks:read",
    conditional: "read",
    currentVersion: (db, agencyId, param) => endpointVersion(db, agencyId, param("endpoint_id") ?? ""),
    errors: ["webhook_endpoint_not_found"],
  },
  {
    method: "get",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}",
    operationId: "getWebhookEndpoint",
    tags: ["Webhooks"],
    summary: "Get a webhook receiver",
    request: { params: endpointIdParam },
    responses: {
      200: {
        description: "The endpoint (without its secret).",
        content: json(WebhookEndpointSchema),
      },
    },
  },
);

export const getEndpointHandler: RouteHandler<typeof getEndpointRoute, AppEnv> = async (c) => {
  const endpoint = await findEndpoint(c.var.db, c.get("caller").agencyId, c.req.valid("param").endpoint_id);
  setEtag(c, endpoint.version);
  return c.json(WebhookEndpointSchema.parse(presentEndpoint(endpoint)), 200);
};
