import { z } from "@hono/zod-openapi";
import { EVENT_TYPE_NAMES } from "../domain/events/catalog";
import type { DeliveryLogEntry } from "../webhooks/endpoints/delivery-log";

/** Longest error text shown; what the service recorded is cut there with an ellipsis. */
export const MAX_ERROR_CHARS = 300;

const bounded = (text: string | null) =>
  text === null || text.length <= MAX_ERROR_CHARS ? text : `${text.slice(0, MAX_ERROR_CHARS - 1)}…`;

const ERROR_DESCRIPTION =
  `Why the attempt failed, at most ${MAX_ERROR_CHARS} characters: \`receiver answered <status>\`, ` +
  "`no answer within 10 s`, `request failed: …`, `receiver refused: url …` (the URL is no longer allowed) or " +
  "`endpoint removed`. Null when it succeeded.";

const DeliveryAttemptSchema = z
  .object({
    attempt: z.number().int().openapi({
      description: "1-based; numbered across replays, so the log never repeats a number.",
      example: 1,
    }),
    attempted_at: z
      .string()
      .openapi({ description: "When the POST started, ISO 8601 UTC.", example: "2026-11-22T15:30:01.000Z" }),
    response_status: z.number().int().nullable().openapi({
      description: "Your receiver's HTTP status; null when it gave none (timeout, connection failure, refused URL).",
      example: 503,
    }),
    latency_ms: z.number().int().openapi({ example: 84 }),
    error: z.string().nullable().openapi({ description: ERROR_DESCRIPTION, example: "receiver answered 503" }),
  })
  .openapi("WebhookDeliveryAttempt");

export const DeliveryLogEntrySchema = z
  .object({
    id: z.string().openapi({
      description: "The delivery's id: the `X-Webhook-Delivery` header of each of its attempts.",
      example: "whd_0mhx3k2a1q8v2l0c9z7rj4",
    }),
    event_id: z.string().openapi({
      description: "The event delivered; read it with GET /api/v1/events/{event_id}.",
      example: "evt_0mhx3k2a1q8v2l0c9z7rj4",
    }),
    event_type: z.enum(EVENT_TYPE_NAMES).openapi({ example: "listing.created" }),
    status: z.enum(["pending", "delivered", "dead", "filtered"]).openapi({
      description:
        "`pending`: queued or being retried. `delivered`: a 2xx answer within 10 seconds. `dead`: retries " +
        "exhausted (about three days), or the endpoint or its URL became unusable; only the dashboard replays it. " +
        "`filtered`: the endpoint's `filters` did not select the event, so nothing was sent (not lost).",
      example: "delivered",
    }),
    attempts: z.number().int().openapi({ description: "Attempts made so far, replays included.", example: 2 }),
    last_response_status: z.number().int().nullable().openapi({
      description: "HTTP status of the last attempt; null before the first or when there was none.",
      example: 200,
    }),
    last_error: z
      .string()
      .nullable()
      .openapi({ description: `Error of the last attempt. ${ERROR_DESCRIPTION}`, example: null }),
    delivered_at: z
      .string()
      .nullable()
      .openapi({ description: "When a 2xx was received, ISO 8601 UTC.", example: "2026-11-22T15:30:31.000Z" }),
    next_attempt_at: z
      .string()
      .nullable()
      .openapi({
        description:
          "For a pending delivery, when the queue tries it next (ISO 8601 UTC): computed from its last attempt and " +
          "the retry schedule (30 s after the first failure, doubling, at most 12 hours apart; a replay restarts " +
          "the schedule), give or take the queue's own latency. A time in the past means it is due and waiting " +
          "in the " +
          "queue. Null when the delivery is settled or its retries are spent (it is about to become dead).",
        example: null,
      }),
    created_at: z
      .string()
      .openapi({ description: "When the delivery was queued, ISO 8601 UTC.", example: "2026-11-22T15:30:00.500Z" }),
    replay_id: z
      .string()
      .nullable()
      .openapi({
        description:
          "The replay that sent the event again (`rpl_…`); null for the delivery made when the event happened. An " +
          "event replayed has one delivery per replay besides its own.",
        example: null,
      }),
    attempt_log: z.array(DeliveryAttemptSchema).openapi({ description: "Every attempt, oldest first." }),
  })
  .openapi("WebhookDelivery");

export const presentDeliveryLogEntry = ({ delivery: d, eventType, attempts, nextAttemptAt }: DeliveryLogEntry) => ({
  id: d.id,
  event_id: d.eventId,
  event_type: eventType,
  status: d.status,
  attempts: d.attempts,
  last_response_status: d.lastResponseStatus,
  last_error: bounded(d.lastError),
  delivered_at: d.deliveredAt,
  next_attempt_at: nextAttemptAt,
  created_at: d.createdAt,
  replay_id: d.replayId ?? null,
  attempt_log: attempts.map((a) => ({
    attempt: a.attempt,
    attempted_at: a.attemptedAt,
    response_status: a.responseStatus,
    latency_ms: a.latencyMs,
    error: bounded(a.error),
  })),
});
