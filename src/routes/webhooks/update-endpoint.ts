import type { RouteHandler } from "@hono/zod-openapi";
import { ifMatch } from "../../http/admission/conditional";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import {
  endpointIdParam,
  presentEndpoint,
  UpdateWebhookEndpointBody,
  WebhookEndpointSchema,
} from "../../schemas/webhooks";
import { findEndpoint, updateEndpoint } from "../../webhooks/endpoints/records";

export const updateEndpointRoute = publicRoute(
  {
    endpoint: "manage_webhook_endpoints",
    scope: "webhooks:write",
    roles: ["super_admin", "admin", "media_agency", "broker", "team_lead"],
    conditional: "write",
    errors: [
      "webhook_endpoint_not_found",
      "webhook_url_not_allowed",
      "webhook_event_type_not_allowed",
      "webhook_filter_invalid",
    ],
  },
  {
    method: "patch",
    path: "/api/v1/webhooks/endpoints/{endpoint_id}",
    operationId: "updateWebhookEndpoint",
    tags: ["Webhooks"],
    summary: "Change a webhook receiver",
    description:
      "Changes the receiver's `url`, `event_types`, `description`, `filters` or `payload`; a field left out keeps " +
      "its value, and `filters: null` removes them. The signing secret and the delivery log stay. The change " +
      "applies to events the outbox hands out after it. New event types need their read scopes, as on " +
      "registration; filters are checked against the event types the endpoint takes after the change (422 " +
      "`webhook_filter_invalid`, naming the path). An update that changes nothing keeps the version. Send " +
      "`If-Match` with the version's ETag to change only what you read.",
    request: { params: endpointIdParam, body: { content: json(UpdateWebhookEndpointBody) } },
    responses: { 200: { description: "The endpoint as changed.", content: json(WebhookEndpointSchema) } },
  },
);

export const updateEndpointHandler: RouteHandler<typeof updateEndpointRoute, AppEnv> = async (c) => {
  const ifVersion = ifMatch(c);
  const db = c.var.db;
  const caller = c.get("caller");
  const b = c.req.valid("json");
  const endpoint = await findEndpoint(db, caller.agencyId, c.req.valid("param").endpoint_id);
  const mark = idempotencyMark(c, db, { status: 200, resourceType: "webhook_endpoint", resourceId: endpoint.id });
  const updated = await updateEndpoint(
    db,
    endpoint,
    {
      url: b.url,
      eventTypes: b.event_types,
      description: b.description,
      filters: b.filters,
      payload: b.payload,
    },
    c.env,
    caller.scopes,
    mark,
    ifVersion,
  );
  return c.json(presentEndpoint(updated), 200);
};
