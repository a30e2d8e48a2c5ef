import { and, eq } from "drizzle-orm";
import type { Db } from "../../db/client";
import { type WebhookDelivery, webhookDeliveries } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";

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
