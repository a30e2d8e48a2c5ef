import { and, eq, gt, inArray, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { type WebhookEndpoint, webhookDeliveries, webhookEndpoints } from "../db/schema";
import { DomainError } from "../lib/errors";
import type { AttemptOutcome } from "./outcome-writer";

/** The error a dropped attempt records in the delivery log. */
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

/**
 * The two statements of a claim that take the drops: the first names the leased deliveries
 * to drop (the first `sandbox_drop_next` of each endpoint's leased rows, by id), the second
 * takes that many off each endpoint's count. Both run in the claim's batch, so concurrent
 * batches never drop more than was asked, and every drop counted is a delivery this batch
 * holds and records at once.
 */
export function dropStatements(db: Db, ids: SQL, lease: string) {
  const leasedHere = sql`FROM webhook_deliveries d WHERE d.id IN ${ids} AND d.leased_until = ${lease}`;
  return [
    db
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .innerJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
      .where(
        and(
          gt(webhookEndpoints.sandboxDropNext, 0),
          inArray(webhookDeliveries.id, ids),
          eq(webhookDeliveries.leasedUntil, lease),
          // Its rank among the endpoint's leased rows, by id, is within the count.
          sql`(SELECT count(*) ${leasedHere} AND d.endpoint_id = ${webhookDeliveries.endpointId}
            AND d.id < ${webhookDeliveries.id}) < ${webhookEndpoints.sandboxDropNext}`,
        ),
      ),
    db
      .update(webhookEndpoints)
      .set({
        sandboxDropNext: sql`max(0, sandbox_drop_next - (SELECT count(*) ${leasedHere} AND d.endpoint_id = webhook_endpoints.id))`,
      })
      .where(
        and(
          gt(webhookEndpoints.sandboxDropNext, 0),
          inArray(webhookEndpoints.id, sql`(SELECT d.endpoint_id ${leasedHere})`),
        ),
      ),
  ] as const;
}

/**
 * A dropped attempt: recorded as the delivery's last, dead, with no request made, as a
 * delivery is lost once a real outage outlasts its retries (replay brings it back).
 */
export const droppedOutcome = (deliveryId: string, endpointId: string, attempt: number): AttemptOutcome => ({
  deliveryId,
  endpointId,
  attempt,
  started: Date.now(),
  latencyMs: 0,
  status: null,
  error: DROPPED_ERROR,
  final: "dead",
});
