import { type RouteHandler, z } from "@hono/zod-openapi";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { endpointIdParam } from "../../schemas/webhooks";
import { findEndpoint } from "../../webhooks/endpoints/records";
import { DROPPED_ERROR, dropNextDeliveries } from "../../webhooks/sandbox-drops";
import { helperGuard, TEST_HELPERS_TAG } from "./schema";

const DropDeliveriesSchema = z.object({
  endpoint_id: z.string().openapi({ description: "The receiver.", example: "we_0mhx3k2a1q8v2l0c9z7rj4" }),
  drop_next: z.number().int().min(0).max(100).openapi({
    description: "How many of its next delivery attempts will be dropped.",
    example: 3,
  }),
});

export const dropDeliveriesRoute = publicRoute(helperGuard("webhooks:write", ["webhook_endpoint_not_found"]), {
  method: "post",
  path: "/api/v1/test_helpers/webhooks/endpoints/{endpoint_id}/drop_deliveries",
  operationId: "testHelperDropDeliveries",
  tags: [TEST_HELPERS_TAG],
  summary: "Drop the next deliveries to a receiver, to rehearse a gap",
  description:
    "What a long outage of your receiver does to its deliveries, without the wait: the next `count` delivery " +
    "attempts to this endpoint are dropped. A dropped delivery gets no request and no retry: it is recorded " +
    `at once as dead, its attempt's error \`${DROPPED_ERROR}\`, exactly as a delivery ends once a real outage ` +
    "outlasts its retries. The events stay in GET /api/v1/events, so a receiver that sees the sequence jump " +
    "fills the gap from there. The count replaces any count left; 0 stops dropping.",
  request: {
    params: endpointIdParam,
    body: {
      content: json(
        z.strictObject({
          count: z.number().int().min(0).max(100).openapi({
            description: "How many of the endpoint's next delivery attempts to drop, at most 100; 0 stops dropping.",
            example: 3,
          }),
        }),
      ),
    },
  },
  responses: { 200: { description: "The count now set.", content: json(DropDeliveriesSchema) } },
});

export const dropDeliveriesHandler: RouteHandler<typeof dropDeliveriesRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const endpoint = await findEndpoint(db, c.get("caller").agencyId, c.req.valid("param").endpoint_id);
  const dropNext = await dropNextDeliveries(
    db,
    endpoint,
    c.req.valid("json").count,
    idempotencyMark(c, db, { status: 200, resourceType: "webhook_endpoint", resourceId: endpoint.id }),
  );
  return c.json(DropDeliveriesSchema.parse({ endpoint_id: endpoint.id, drop_next: dropNext }), 200);
};
