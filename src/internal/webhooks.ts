import { OpenAPIHono, z } from "@hono/zod-openapi";
import { type Db, database } from "../db/client";
import type { WebhookDelivery } from "../db/schema";
import type { AppEnv } from "../http/env";
import { internalRoute } from "../http/route";
import { validationHook } from "../http/validation";
import { cursorQuery, pageSchema } from "../schemas/page";
import { attemptsOf, pageDeliveries, replayDelivery } from "../webhooks/deliveries";

const AttemptSchema = z.object({
  attempt: z.number().int(),
  attempted_at: z.string(),
  response_status: z.number().int().nullable(),
  latency_ms: z.number().int(),
  error: z.string().nullable(),
});
const DeliverySchema = z
  .object({
    id: z.string(),
    event_id: z.string(),
    endpoint_id: z.string(),
    status: z.enum(["pending", "delivered", "dead"]),
    attempts: z.number().int(),
    last_response_status: z.number().int().nullable(),
    last_error: z.string().nullable(),
    delivered_at: z.string().nullable(),
    created_at: z.string(),
    attempt_log: z.array(AttemptSchema),
  })
  .openapi("WebhookDelivery");

async function present(db: Db, rows: WebhookDelivery[]) {
  const attempts = await attemptsOf(
    db,
    rows.map((r) => r.id),
  );
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

const list = internalRoute([], {
  method: "get",
  path: "/internal/v1/agencies/{agency_id}/webhook-deliveries",
  operationId: "listWebhookDeliveries",
  tags: ["Webhooks"],
  summary: "List an agency's webhook deliveries with every attempt",
  request: {
    params: z.object({ agency_id: z.string() }),
    query: z.strictObject({
      ...cursorQuery,
      status: z.enum(["pending", "delivered", "dead"]).optional(),
      event_id: z.string().optional(),
    }),
  },
  responses: {
    200: {
      description: "A page of deliveries.",
      content: { "application/json": { schema: pageSchema(DeliverySchema, "WebhookDeliveryPage") } },
    },
  },
});

const replay = internalRoute(["webhook_delivery_not_found", "queue_unavailable"], {
  method: "post",
  path: "/internal/v1/webhook-deliveries/{delivery_id}/replay",
  operationId: "replayWebhookDelivery",
  tags: ["Webhooks"],
  summary: "Replay a delivery (dead-lettered or any past one)",
  description:
    "Sends the event to the endpoint again, as a new attempt with a fresh timestamp and nonce and the same event_id; the retry schedule starts over.",
  request: { params: z.object({ delivery_id: z.string() }) },
  responses: { 202: { description: "Queued again.", content: { "application/json": { schema: DeliverySchema } } } },
});

export const webhooksInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(list, async (c) => {
    const { agency_id } = c.req.valid("param");
    const { cursor, limit, status, event_id } = c.req.valid("query");
    const db = database(c.env.DB);
    const page = await pageDeliveries(
      db,
      agency_id,
      { status, eventId: event_id },
      { secret: c.env.SECRET_KEY, cursor, limit },
    );
    return c.json({ data: await present(db, page.rows), next_cursor: page.nextCursor }, 200);
  })
  .openapi(replay, async (c) => {
    const db = database(c.env.DB);
    const updated = await replayDelivery(db, c.env.WEBHOOK_QUEUE, c.req.valid("param").delivery_id);
    return c.json((await present(db, [updated]))[0]!, 202);
  });
