import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { database } from "../db/client";
import { events, webhookDeliveries, webhookEndpoints } from "../db/schema";
import { newId, nowIso } from "../lib/ids";

export const DRAIN_BATCH = 100;

/**
 * Drains the outbox into the webhook queue: for each event not yet enqueued, one
 * delivery row per subscribed endpoint of the event's agency (unique per pair, so a
 * repeated drain adds nothing) and one queue message per pending delivery. The event is
 * marked enqueued only after its messages were accepted, so a failed send loses nothing:
 * the next drain (every minute by Cron, and after each change) sends it again. Delivery
 * is at-least-once; receivers deduplicate on `event_id`.
 */
export async function drainOutbox(env: Env, limit = DRAIN_BATCH): Promise<{ events: number; messages: number }> {
  const db = database(env.DB);
  const pending = await db.select().from(events).where(isNull(events.enqueuedAt)).orderBy(asc(events.createdAt)).limit(limit);
  let messages = 0;
  for (const event of pending) {
    const endpoints = await db
      .select({ id: webhookEndpoints.id, eventTypes: webhookEndpoints.eventTypes })
      .from(webhookEndpoints)
      .where(and(eq(webhookEndpoints.agencyId, event.agencyId), eq(webhookEndpoints.isActive, true)));
    const subscribed = endpoints.filter((e) => e.eventTypes === null || e.eventTypes.includes(event.eventType));
    if (subscribed.length) {
      await db
        .insert(webhookDeliveries)
        .values(subscribed.map((e) => ({ id: newId("whd"), eventId: event.id, endpointId: e.id, agencyId: event.agencyId })))
        .onConflictDoNothing();
      const deliveries = await db
        .select({ id: webhookDeliveries.id })
        .from(webhookDeliveries)
        .where(and(eq(webhookDeliveries.eventId, event.id), eq(webhookDeliveries.status, "pending"), inArray(webhookDeliveries.endpointId, subscribed.map((e) => e.id))));
      if (deliveries.length) {
        await env.WEBHOOK_QUEUE.sendBatch(deliveries.map((d) => ({ body: { delivery_id: d.id } })));
        messages += deliveries.length;
      }
    }
    await db.update(events).set({ enqueuedAt: nowIso() }).where(eq(events.id, event.id));
  }
  return { events: pending.length, messages };
}

/**
 * After a successful change, drain the outbox in the background so its events leave
 * within seconds; the every-minute sweep catches anything this misses.
 */
export function drainAfterWrites(): MiddlewareHandler<AppEnv> {
  return async function drainAfterWrites(c, next) {
    await next();
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS" || c.res.status >= 400) return;
    let waitUntil: (p: Promise<unknown>) => void;
    try {
      const ctx = c.executionCtx;
      waitUntil = ctx.waitUntil.bind(ctx);
    } catch {
      return; // no execution context (called outside a Worker invocation)
    }
    waitUntil(
      drainOutbox(c.env).catch((err: unknown) => console.error(JSON.stringify({ level: "error", job: "outbox_drain", error: String(err) }))),
    );
  };
}
