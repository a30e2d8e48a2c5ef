import { asc, inArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { type WebhookDeliveryAttempt, webhookDeliveryAttempts } from "../../db/schema";

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
