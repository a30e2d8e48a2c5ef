import { z } from "@hono/zod-openapi";
import type { WebhookDelivery, WebhookDeliveryAttempt } from "../../db/schema";

const AttemptSchema = z.object({
  attempt: z.number().int(),
  attempted_at: z.string(),
  response_status: z.number().int().nullable(),
  latency_ms: z.number().int(),
  error: z.string().nullable(),
});

export const DeliverySchema = z
  .object({
    id: z.string(),
    event_id: z.string(),
    endpoint_id: z.string(),
    status: z.enum(["pending", "delivered", "dead", "filtered"]),
    attempts: z.number().int(),
    last_response_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    delivered_at: z.string().nullable(),
    created_at: z.string(),
    replay_id: z.string().nullable().openapi({ description: "The replay that sent it; null for the live delivery." }),
    attempt_log: z.array(AttemptSchema),
  })
  .openapi("WebhookDelivery");

/** Deliveries with their attempt logs; `attempts` holds the attempts of all of them, oldest first. */
export function presentDeliveries(rows: WebhookDelivery[], attempts: WebhookDeliveryAttempt[]) {
  return rows.map((d) => ({
    id: d.id,
    event_id: d.eventId,
    endpoint_id: d.endpointId,
    status: d.status,
    attempts: d.attempts,
    last_response_status: d.lastResponseStatus,
    last_error: d.lastError,
    delivered_at: d.deliveredAt,
    created_at: d.createdAt,
    replay_id: d.replayId ?? null,
    attempt_log: attempts
      .filter((a) => a.deliveryId === d.id)
      .map((a) => ({
        attempt: a.attempt,
        attempted_at: a.attemptedAt,
        response_status: a.responseStatus,
        latency_ms: a.latencyMs,
        error: a.error,
      })),
  }));
}
