import { and, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { type WebhookEndpoint, webhookEndpoints } from "../db/schema";
import { DomainError } from "../lib/errors";

/**
 * The error a dropped attempt records in the delivery log. The drop itself is the trigger
 * `webhook_deliveries_sandbox_drop` (in the migrations): it fires in the statement that leases
 * a delivery whose endpoint has drops left, takes one, logs the attempt and ends the
 * delivery dead, so the consumer finds it settled and acks its message without a request.
 */
export const DROPPED_ERROR = "dropped by sandbox helper";

/**
 * Sets how many of the endpoint's next delivery attempts are dropped (0 stops dropping).
 * Held to the caller's agency in the statement; an endpoint removed meanwhile is
 * `webhook_endpoint_not_found`. `alsoWrite` commits with it (the idempotency mark).
 */
export async function dropNextDeliveries(
  db: Db,
  endpoint: Pick<WebhookEndpoint, "id" | "agencyId">,
  count: number,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<number> {
  const [[row]] = await db.batch([
    db
      .update(webhookEndpoints)
      .set({ sandboxDropNext: count })
      .where(and(eq(webhookEndpoints.id, endpoint.id), eq(webhookEndpoints.agencyId, endpoint.agencyId)))
      .returning({ dropNext: webhookEndpoints.sandboxDropNext }),
    ...alsoWrite,
  ]);
  if (!row) throw new DomainError("webhook_endpoint_not_found");
  return row.dropNext;
}
