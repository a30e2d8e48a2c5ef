import type { RouteHandler } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { presentRequestTrail, RequestTrailSchema, requestIdParam } from "../../schemas/request-trail";
import { requestTrail } from "../../webhooks/request-trail";

export const getRequestRoute = publicRoute(
  { endpoint: "read_request_single", scope: "webhooks:read", errors: ["request_not_found"] },
  {
    method: "get",
    path: "/api/v1/requests/{request_id}",
    operationId: "getRequest",
    tags: ["Requests"],
    summary: "Look up a write by its request id",
    description:
      "What one of your agency's writes did, by the `X-Request-Id` of its answer: when it ran, the route, the " +
      "status it answered, its idempotency key, the resource it created or changed, the events it wrote and each " +
      "event's webhook deliveries with their attempts. Only a write that committed its change in the last 24 " +
      "hours can be looked up; a read, a write that failed or was replayed, an older one, another agency's or an " +
      "unknown id answers 404 `request_not_found`. A key sees only the events its scopes read, and the resource " +
      "and idempotency key only when it may read that resource. Read-only.",
    request: { params: requestIdParam },
    responses: { 200: { description: "The request and what it did.", content: json(RequestTrailSchema) } },
  },
);

export const getRequestHandler: RouteHandler<typeof getRequestRoute, AppEnv> = async (c) => {
  const trail = await requestTrail(c.var.db, c.req.valid("param").request_id, c.get("caller").agencyId);
  return c.json(presentRequestTrail(trail, c.get("caller").scopes), 200);
};
