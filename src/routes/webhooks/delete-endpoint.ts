import type { RouteHandler } from "@hono/zod-openapi";
import { ifMatch } from "../../http/admission/conditional";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { publicRoute } from "../../http/route";
import { endpointIdParam } from "../../schemas/webhooks";
import { deleteEndpoint, findEndpoint } from "../../webhooks/endpoints/records";

export const deleteEndpointRoute = publicRoute(
  {
    endpoint: "manage_webhook_endpoints",
    scope: "webhooks:write",
    roles: ["super_admin", "admin", "media_agency", "broker", "team_lead"],
    conditional: "write",
    errors: ["webhook_endpoint_not_found"],
  },
  {
    method: "delete",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}",
    operationId: "deleteWebhookEndpoint",
    tags: ["Webhooks"],
    summary: "Remove a webhook receiver",
    description: "Stops deliveries to this receiver. 204 with no body.",
    request: { params: endpointIdParam },
    responses: { 204: { description: "Removed." } },
  },
);

export const deleteEndpointHandler: RouteHandler<typeof deleteEndpointRoute, AppEnv> = async (c) => {
  const ifVersion = ifMatch(c);
  const db = c.var.db;
  const endpoint = await findEndpoint(db, c.get("caller").agencyId, c.req.valid("param").endpoint_id);
  const mark = idempotencyMark(c, db, {
    status: 204,
    resourceType: "webhook_endpoint",
    resourceId: endpoint.id,
    ifChanged: true,
  });
  await deleteEndpoint(db, endpoint, mark, ifVersion);
  return c.body(null, 204);
};
