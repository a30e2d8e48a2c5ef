import { and, asc, eq, inArray, isNull } from "drizzle-orm";
import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { database } from "../db/client";
import { events, webhookDeliveries, webhookEndpoints } from "../db/schema";
import { newId, nowIso } from "../lib/ids";

export const DRAIN_BATCH = 100;
/** D1 binds at most 100 parameters per statement. */
const CHUNK = 20;

const chunks = <T>(items: T[], size = CHUNK) => Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/**
 * Drains the outbox into the webhook queue: for the events not yet enqueued, one
 * delivery row per subscribed endpoint of the event's agency (unique per pair, so a
 * repeated drain adds nothing) and one queue message per pending delivery. Events are
 * marked enqueued only after their messages were accepted, so a failed send loses
 * nothing: the next drain (after the next change, and every minute by Cron) sends them
 * again. Delivery is at-least-once; receivers deduplicate on `event_id`.
 */
export async function drainOutbox(env: Env, limit = DRAIN_BATCH): Promise<{ events: number; messages: number }> {
  const db = database(env.DB);
  const pending = await db.select().from(events).where(isNull(events.enqueuedAt)).orderBy(asc(events.createdAt)).limit(limit);
  if (!pending.length) return { events: 0, messages: 0 };
  const agencies = [...new Set(pending.map((e) => e.agencyId))];
  const endpoints = (
    await Promise.all(
      chunks(agencies).map((ids) =>
        db.select({ id: webhookEndpoints.id, agencyId: webhookEndpoints.agencyId, eventTypes: webhookEndpoints.eventTypes }).from(webhookEndpoints).where(and(inArray(webhookEndpoints.agencyId, ids), eq(webhookEndpoints.isActive, true))),
      ),
    )
  ).flat();
  const rows = pending.flatMap((event) =>
    endpoints
      .filter((e) => e.agencyId === event.agencyId && (e.eventTypes === null || e.eventTypes.includes(event.eventType)))
      .map((e) => ({ id: newId("whd"), eventId: event.id, endpointId: e.id, agencyId: event.agencyId })),
  );
  let messages = 0;
  if (rows.length) {
    const [first, ...rest] = chunks(rows).map((chunk) => db.insert(webhookDeliveries).values(chunk).onConflictDoNothing());
    await db.batch([first!, ...rest]);
    const eventIds = [...new Set(rows.map((r) => r.eventId))];
    const deliveries = (
      await Promise.all(chunks(eventIds).map((ids) => db.select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(and(inArray(webhookDeliveries.eventId, ids), eq(webhookDeliveries.status, "pending")))))
    ).flat();
    for (const batch of chunks(deliveries, 100)) {
      await env.WEBHOOK_QUEUE.sendBatch(batch.map((d) => ({ body: { delivery_id: d.id } })));
      messages += batch.length;
    }
  }
  const at = nowIso();
  const [first, ...rest] = chunks(pending.map((e) => e.id), 90).map((ids) => db.update(events).set({ enqueuedAt: at }).where(inArray(events.id, ids)));
  await db.batch([first!, ...rest]);
  return { events: pending.length, messages };
}

/** One drain at a time per isolate: changes that land while one runs make it run once more. */
let inFlight: Promise<void> | undefined;
let again = false;
function coalescedDrain(env: Env): Promise<void> {
  if (inFlight) {
    again = true;
    return inFlight;
  }
  inFlight = (async () => {
    do {
      again = false;
      await drainOutbox(env);
    } while (again);
  })().finally(() => {
    inFlight = undefined;
  });
  return inFlight;
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
      coalescedDrain(c.env).catch((err: unknown) => console.error(JSON.stringify({ level: "error", job: "outbox_drain", error: String(err) }))),
    );
  };
}
