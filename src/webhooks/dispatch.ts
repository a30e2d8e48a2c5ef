import { and, asc, eq, getTableColumns, inArray, isNull, lt, or } from "drizzle-orm";
import { type Db, database } from "../db/client";
import { type EventRow, events, webhookDeliveries, webhookEndpoints } from "../db/schema";
import { newId, nowIso } from "../lib/ids";

export const DRAIN_BATCH = 100;
/** D1 binds at most 100 parameters per statement. */
const CHUNK = 20;

const DELIVERY_ROWS_PER_INSERT = Math.floor(100 / Object.keys(getTableColumns(webhookDeliveries)).length);

const chunks = <T>(items: T[], size = CHUNK) =>
  Array.from({ length: Math.ceil(items.length / size) }, (_, i) => items.slice(i * size, (i + 1) * size));

/** How long a drain holds the events it claimed; a drain that dies releases them by expiry. */
export const CLAIM_SECONDS = 60;

/**
 * Drains the outbox into the webhook queue. One UPDATE claims a page of unsent events
 * (D1 runs writes one at a time, so concurrent drains in other isolates never claim the
 * same event); for each, one delivery row per subscribed endpoint of the event's agency
 * (unique per pair) and one queue message per pending delivery. Events are marked
 * enqueued only after their messages were accepted. A failed send releases the claim and
 * a drain that dies lets it expire, so nothing is lost: the next drain (after the next
 * change, and every minute by Cron) sends them again. Delivery is at-least-once;
 * receivers deduplicate on `event_id`.
 */
export async function drainOutbox(env: Env, limit = DRAIN_BATCH): Promise<{ events: number; messages: number }> {
  const db = database(env.DB);
  const now = Date.now();
  const unsent = db
    .select({ id: events.id })
    .from(events)
    .where(and(isNull(events.enqueuedAt), or(isNull(events.claimedUntil), lt(events.claimedUntil, nowIso(now)))))
    .orderBy(asc(events.createdAt))
    .limit(limit);
  const claimed = await db
    .update(events)
    .set({ claimedUntil: nowIso(now + CLAIM_SECONDS * 1000) })
    .where(inArray(events.id, unsent))
    .returning();
  if (!claimed.length) return { events: 0, messages: 0 };
  const pending = claimed.sort((a, b) => a.createdAt.localeCompare(b.createdAt));
  const eventIdChunks = chunks(
    pending.map((e) => e.id),
    90,
  );
  try {
    const messages = await fanOut(db, env, pending);
    const at = nowIso();
    const [first, ...rest] = eventIdChunks.map((ids) =>
      db.update(events).set({ enqueuedAt: at }).where(inArray(events.id, ids)),
    );
    await db.batch([first!, ...rest]);
    return { events: pending.length, messages };
  } catch (err) {
    const [first, ...rest] = eventIdChunks.map((ids) =>
      db
        .update(events)
        .set({ claimedUntil: null })
        .where(and(inArray(events.id, ids), isNull(events.enqueuedAt))),
    );
    await db.batch([first!, ...rest]).catch(() => undefined);
    throw err;
  }
}

/** Delivery rows for the claimed events and one queue message per pending delivery. */
async function fanOut(db: Db, env: Env, pending: EventRow[]): Promise<number> {
  const agencies = [...new Set(pending.map((e) => e.agencyId))];
  const endpoints = (
    await Promise.all(
      chunks(agencies).map((ids) =>
        db
          .select({
            id: webhookEndpoints.id,
            agencyId: webhookEndpoints.agencyId,
            eventTypes: webhookEndpoints.eventTypes,
          })
          .from(webhookEndpoints)
          .where(and(inArray(webhookEndpoints.agencyId, ids), eq(webhookEndpoints.isActive, true))),
      ),
    )
  ).flat();
  const rows = pending.flatMap((event) =>
    endpoints
      .filter((e) => e.agencyId === event.agencyId && (e.eventTypes === null || e.eventTypes.includes(event.eventType)))
      .map((e) => ({ id: newId("whd"), eventId: event.id, endpointId: e.id, agencyId: event.agencyId })),
  );
  if (!rows.length) return 0;
  // Every column of a delivery row is bound (defaults included), so few rows fit in one statement.
  const [first, ...rest] = chunks(rows, DELIVERY_ROWS_PER_INSERT).map((chunk) =>
    db.insert(webhookDeliveries).values(chunk).onConflictDoNothing(),
  );
  await db.batch([first!, ...rest]);
  // Rows left by an earlier drain whose send failed are pending too, and go out now.
  const eventIds = [...new Set(rows.map((r) => r.eventId))];
  const deliveries = (
    await Promise.all(
      chunks(eventIds).map((ids) =>
        db
          .select({ id: webhookDeliveries.id })
          .from(webhookDeliveries)
          .where(and(inArray(webhookDeliveries.eventId, ids), eq(webhookDeliveries.status, "pending"))),
      ),
    )
  ).flat();
  let messages = 0;
  for (const batch of chunks(deliveries, 100)) {
    await env.WEBHOOK_QUEUE.sendBatch(batch.map((d) => ({ body: { delivery_id: d.id } })));
    messages += batch.length;
  }
  return messages;
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

/** Sweeps kept to one Cron invocation's share of time: 20 drains of 100 events. */
export const SWEEP_MAX_DRAINS = 20;

/**
 * The Cron sweeper: drains until the outbox is empty (or the per-run bound is reached),
 * so a backlog larger than one drain does not wait a minute per hundred events.
 */
export async function sweepOutbox(env: Env, limit = DRAIN_BATCH): Promise<{ events: number; messages: number }> {
  const total = { events: 0, messages: 0 };
  for (let i = 0; i < SWEEP_MAX_DRAINS; i++) {
    const drained = await drainOutbox(env, limit);
    total.events += drained.events;
    total.messages += drained.messages;
    if (drained.events < limit) break;
  }
  return total;
}

/**
 * Sends the outbox's new events to the queue in the background of the current
 * invocation, for any code that wrote events (a request, a queue consumer, a Cron job).
 * Failures are logged only: the every-minute sweep sends whatever this leaves behind.
 */
export function kickOutbox(env: Env, ctx: Pick<ExecutionContext, "waitUntil">): void {
  ctx.waitUntil(
    coalescedDrain(env).catch((err: unknown) =>
      console.error(JSON.stringify({ level: "error", job: "outbox_drain", error: String(err) })),
    ),
  );
}
