import { OpenAPIHono, z } from "@hono/zod-openapi";
import { and, asc, eq, inArray } from "drizzle-orm";
import { database } from "../db/client";
import { type WebhookDelivery, webhookDeliveries, webhookDeliveryAttempts } from "../db/schema";
import type { AppEnv } from "../http/env";
import { after, cursorQuery, decodeCursor, pageSchema, toPage } from "../http/pagination";
import { internalRoute } from "../http/route";
import { validationHook } from "../http/validation";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";

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

async function present(db: ReturnType<typeof database>, rows: WebhookDelivery[]) {
  const attempts = rows.length
    ? await db
        .select()
        .from(webhookDeliveryAttempts)
        .where(
          inArray(
            webhookDeliveryAttempts.deliveryId,
            rows.map((r) => r.id),
          ),
        )
        .orderBy(asc(webhookDeliveryAttempts.attemptedAt))
    : [];
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
    const listName = `deliveries:${agency_id}:${status ?? ""}:${event_id ?? ""}`;
    const at = await decodeCursor(c.env.SECRET_KEY, listName, cursor);
    const rows = await db
      .select()
      .from(webhookDeliveries)
      .where(
        and(
          eq(webhookDeliveries.agencyId, agency_id),
          status ? eq(webhookDeliveries.status, status) : undefined,
          event_id ? eq(webhookDeliveries.eventId, event_id) : undefined,
          after(webhookDeliveries.createdAt, webhookDeliveries.id, at),
        ),
      )
      .orderBy(asc(webhookDeliveries.createdAt), asc(webhookDeliveries.id))
      .limit(limit + 1);
    const page = await toPage(c.env.SECRET_KEY, listName, rows, limit, (r) => r);
    return c.json({ data: await present(db, page.data), next_cursor: page.next_cursor }, 200);
  })
  .openapi(replay, async (c) => {
    const db = database(c.env.DB);
    const { delivery_id } = c.req.valid("param");
    const delivery = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery_id)).get();
    if (!delivery) throw new DomainError("webhook_delivery_not_found");
    // Pending before the message exists, or a fast consumer would skip it as already
    // settled; if the queue refuses, the delivery goes back to what it was.
    const [updated] = await db
      .update(webhookDeliveries)
      .set({ status: "pending", updatedAt: nowIso() })
      .where(eq(webhookDeliveries.id, delivery_id))
      .returning();
    try {
      await c.env.WEBHOOK_QUEUE.send({ delivery_id });
    } catch {
      await db
        .update(webhookDeliveries)
        .set({ status: delivery.status, updatedAt: delivery.updatedAt })
        .where(and(eq(webhookDeliveries.id, delivery_id), eq(webhookDeliveries.updatedAt, updated!.updatedAt)));
      throw new DomainError("queue_unavailable", { retryAfter: 30 });
    }
    return c.json((await present(db, [updated!]))[0]!, 202);
  });
