import { type RouteHandler, z } from "@hono/zod-openapi";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { attemptsOf } from "../../webhooks/delivery/attempt-history";
import { replayDelivery } from "../../webhooks/delivery/replay";
import { DeliverySchema, presentDeliveries } from "./schema";

export const replayWebhookDeliveryRoute = internalRoute(["webhook_delivery_not_found", "queue_unavailable"], {
  method: "post",
  path: "/internal/v1/webhook-deliveries/{delivery_id}/replay",
  operationId: "replayWebhookDelivery",
  tags: ["Webhooks"],
  summary: "Replay a delivery (dead-lettered or any past one)",
  description:
    "Sends the event to the endpoint again, as a new attempt with a fresh timestamp and nonce and the same event_id; " +
    "the retry schedule starts over.",
  request: { params: z.object({ delivery_id: z.string() }) },
  responses: { 202: { description: "Queued again.", content: json(DeliverySchema) } },
});

export const replayWebhookDeliveryHandler: RouteHandler<typeof replayWebhookDeliveryRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const updated = await replayDelivery(db, c.env.WEBHOOK_QUEUE, c.req.valid("param").delivery_id);
  const [presented] = presentDeliveries([updated], await attemptsOf(db, [updated.id]));
  return c.json(presented!, 202);
};
