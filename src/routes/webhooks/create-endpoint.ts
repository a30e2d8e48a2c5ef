import type { RouteHandler } from "@hono/zod-openapi";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { created, json, publicRoute, setLocation } from "../../http/route";
import { READ_SCOPES_TEXT } from "../../schemas/events";
import { CreatedWebhookEndpointSchema, CreateWebhookEndpointBody, presentEndpoint } from "../../schemas/webhooks";
import { createEndpoint } from "../../webhooks/endpoints/records";

export const createEndpointRoute = publicRoute(
  {
    endpoint: "manage_webhook_endpoints",
    scope: "webhooks:write",
    roles: ["super_admin", "admin", "media_agency", "broker", "team_lead"],
    errors: [
      "webhook_url_not_allowed",
      "webhook_event_type_not_allowed",
      "webhook_endpoint_limit_reached",
      "webhook_filter_invalid",
    ],
    replaysToCallerOnly: true,
  },
  {
    method: "post",
    path: "/api/v1/webhooks/endpoints",
    operationId: "createWebhookEndpoint",
    tags: ["Webhooks"],
    summary: "Register a webhook receiver",
    description:
      "Registers an https receiver for the given event types (all active types when omitted). The answer carries " +
      "the signing secret exactly once: `whsec_` + standard base64 of 32 random bytes. Each delivery carries two " +
      "signatures; verify either. `X-Webhook-Signature: sha256=<hex>`: HMAC-SHA256 of the raw body keyed with the " +
      "whole secret (`whsec_` included). Standard Webhooks: `webhook-signature: v1,<base64>`, HMAC-SHA256 of " +
      "`<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the base64-decoded bytes after `whsec_`, where " +
      "`webhook-id` is the event id and `webhook-timestamp` the attempt's Unix seconds; standardwebhooks libraries " +
      "verify it with the secret as given. An unknown or non-public event type is 422 " +
      "`webhook_event_type_not_allowed` naming it; a loopback, private, link-local or metadata receiver is 422 " +
      "`webhook_url_not_allowed`. An agency has at most 16 active endpoints: registering another is 409 " +
      "`webhook_endpoint_limit_reached` until one is deleted. " +
      "A subscription never carries more than your key may read: each event type needs its read scope " +
      `(${READ_SCOPES_TEXT}; the catalog's \`read_scope\`). Naming a type your key may not read is 403 ` +
      "`auth.scope_denied`, with `details.missing_scopes` and `details.event_types`; omitting `event_types` " +
      "subscribes a key that reads every type to every active type (`event_types` null, types added later " +
      "included), and any other key to the types it reads now (listed in `event_types`); a key that reads none " +
      "is refused. " +
      "Like every POST, a repeat with the same `X-Idempotency-Key` by the same API key within 24 hours answers " +
      "this same response, so a client that lost it can still learn the secret (the cached answer is kept " +
      "encrypted); another key of the agency reusing that idempotency key gets 409 `idempotency_key_conflict`, " +
      "never the secret. A new idempotency key registers a new endpoint. " +
      "`filters` deliver only the events that meet every condition (`data.<field>` and the values it may hold; " +
      "a path that none of the endpoint's event types carries is 422 `webhook_filter_invalid`), and `payload: " +
      "thin` sends the envelope without `data`, with `resource` and its ids.",
    request: { body: { content: json(CreateWebhookEndpointBody) } },
    responses: created(
      "The endpoint and its signing secret (shown once).",
      CreatedWebhookEndpointSchema,
      "/api/v1/webhooks/endpoints/we_0mhx3k2a1q8v2l0c9z7rj4",
    ),
  },
);

export const createEndpointHandler: RouteHandler<typeof createEndpointRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const db = c.var.db;
  const caller = c.get("caller");
  // The replay of a lost response cannot show the secret again, so the mark names only the endpoint.
  const { endpoint, secret } = await createEndpoint(
    db,
    caller.agencyId,
    c.env,
    {
      url: b.url,
      eventTypes: b.event_types,
      description: b.description,
      filters: b.filters,
      payload: b.payload,
      scopes: caller.scopes,
    },
    ({ id }) => idempotencyMark(c, db, { status: 201, resourceType: "webhook_endpoint", resourceId: id }),
  );
  setLocation(c, `/api/v1/webhooks/endpoints/${endpoint.id}`);
  return c.json(CreatedWebhookEndpointSchema.parse({ ...presentEndpoint(endpoint), signing_secret: secret }), 201);
};
