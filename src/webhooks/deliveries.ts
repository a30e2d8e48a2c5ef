import { and, asc, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { keysetPage, type PageRequest } from "../db/pages";
import {
  type WebhookDelivery,
  type WebhookDeliveryAttempt,
  webhookDeliveries,
  webhookDeliveryAttempts,
} from "../db/schema";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";

/** The agency's deliveries, oldest first, optionally by status and event. */
export function pageDeliveries(
  db: Db,
  agencyId: string,
  filters: { status?: WebhookDelivery["status"]; eventId?: string },
  req: PageRequest,
) {
  const { status, eventId } = filters;
  const where = and(
    eq(webhookDeliveries.agencyId, agencyId),
    status ? eq(webhookDeliveries.status, status) : undefined,
    eventId ? eq(webhookDeliveries.eventId, eventId) : undefined,
  );
  return keysetPage(db, webhookDeliveries, `deliveries:${agencyId}:${status ?? ""}:${eventId ?? ""}`, where, req);
}

/**
 * Every attempt of these deliveries, oldest first. The ids travel as one JSON array
 * (one bound parameter), so a page of any size stays inside D1's 100-parameter limit.
 */
export async function attemptsOf(db: Db, deliveryIds: string[]): Promise<WebhookDeliveryAttempt[]> {
  if (!deliveryIds.length) return [];
  const ids = sql`(SELECT value FROM json_each(${JSON.stringify(deliveryIds)}))`;
  return db
    .select()
    .from(webhookDeliveryAttempts)
    .where(inArray(webhookDeliveryAttempts.deliveryId, ids))
    .orderBy(asc(webhookDeliveryAttempts.attemptedAt));
}

/**
 * Queues a delivery again as a fresh attempt. It is marked pending before the message
 * exists, or a fast consumer would skip it as already settled; if the queue refuses, the
 * delivery goes back to what it was and the caller gets `queue_unavailable`.
 */
export async function replayDelivery(db: Db, queue: Queue, deliveryId: string): Promise<WebhookDelivery> {
  const delivery = await db.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, deliveryId)).get();
  if (!delivery) throw new DomainError("webhook_delivery_not_found");
  const at = nowIso();
  const [updated] = await db
    .update(webhookDeliveries)
    .set({ status: "pending", updatedAt: at, replayedAt: at })
    .where(eq(webhookDeliveries.id, deliveryId))
    .returning();
  // Removed in between by the retention sweep.
  if (!updated) throw new DomainError("webhook_delivery_not_found");
  try {
    await queue.send({ delivery_id: deliveryId });
  } catch {
    await db
      .update(webhookDeliveries)
      .set({ status: delivery.status, updatedAt: delivery.updatedAt, replayedAt: delivery.replayedAt })
      .where(and(eq(webhookDeliveries.id, deliveryId), eq(webhookDeliveries.updatedAt, updated.updatedAt)));
    throw new DomainError("queue_unavailable", { retryAfter: 30 });
  }
  return updated;
}
