import { and, eq } from "drizzle-orm";
import { database } from "../../db/client";
import { webhookDeliveries } from "../../db/schema";
import { nowIso } from "../../lib/ids";
import { errorText, log } from "../../lib/telemetry/log";
import { FIRST_RETRY_SECONDS } from "./retry-schedule";
import type { DeliveryBody } from "./settling";

/**
 * The dead-letter queue's consumer: a delivery that exhausted its retries is dead. Only a
 * pending one: a delivery replayed and delivered since must not be marked dead by a late
 * message. Each message is settled alone: one that cannot be recorded is retried.
 */
export async function consumeDeadWebhooks(batch: MessageBatch<DeliveryBody>, env: Env): Promise<void> {
  const db = database(env.DB);
  for (const message of batch.messages) {
    try {
      await db
        .update(webhookDeliveries)
        .set({ status: "dead", leasedUntil: null, updatedAt: nowIso() })
        .where(and(eq(webhookDeliveries.id, message.body.delivery_id), eq(webhookDeliveries.status, "pending")));
      message.ack();
    } catch (err) {
      log.error("dead letter not recorded", {
        job: "webhook_dead_letter",
        delivery_id: message.body.delivery_id,
        error: errorText(err),
      });
      message.retry({ delaySeconds: FIRST_RETRY_SECONDS });
    }
  }
}
