import { and, eq, inArray, isNull, lt, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import {
  events,
  type WebhookDelivery,
  type WebhookEndpoint,
  webhookDeliveries,
  webhookEndpoints,
} from "../../db/schema";
import { nowIso } from "../../lib/ids";
import { LEASE_MS } from "./limits";

/** A delivery of the batch with what its attempt needs from its endpoint (null once removed). */
export interface Target {
  delivery: Pick<WebhookDelivery, "id" | "status" | "eventId" | "endpointId" | "agencyId" | "leasedUntil" | "replayId">;
  endpoint: Pick<
    WebhookEndpoint,
    "id" | "agencyId" | "url" | "isActive" | "secretSealed" | "consecutiveFailures" | "pausedUntil" | "payload"
  > | null;
}

export type StoredEvent = typeof events.$inferSelect;

/** What a batch holds after its lease: every delivery named, the leased ones' attempt numbers and events. */
export interface Claim {
  /** The lease's expiry, also the mark of the rows this batch holds. */
  lease: string;
  targets: Map<string, Target>;
  /** Delivery id → its attempts so far, for the deliveries this batch leased. */
  leased: Map<string, number>;
  events: Map<string, StoredEvent>;
}

/**
 * Leases the batch's deliverable rows and loads what their attempts need, in one D1
 * round trip (a batch of three statements, each taking the ids as one JSON parameter, so
 * a batch of any size stays inside D1's 100-parameter limit): the lease takes every
 * pending delivery no other attempt holds whose endpoint is not paused; then the
 * deliveries with their endpoints, and the leased deliveries' events. The lease is what
 * keeps one request in flight per delivery: a duplicate message, here or in a batch
 * running at the same time, finds the row held and waits.
 */
export async function claimBatch(db: Db, deliveryIds: string[], now: number): Promise<Claim> {
  const lease = nowIso(now + LEASE_MS);
  const ids = sql`(SELECT value FROM json_each(${JSON.stringify(deliveryIds)}))`;
  const [leased, rows, loaded] = await db.batch([
    db
      .update(webhookDeliveries)
      .set({ leasedUntil: lease })
      .where(
        and(
          inArray(webhookDeliveries.id, ids),
          eq(webhookDeliveries.status, "pending"),
          or(isNull(webhookDeliveries.leasedUntil), lt(webhookDeliveries.leasedUntil, nowIso(now))),
          sql`NOT EXISTS (SELECT 1 FROM webhook_endpoints e
            WHERE e.id = webhook_deliveries.endpoint_id AND e.paused_until > ${nowIso(now)})`,
        ),
      )
      .returning({ id: webhookDeliveries.id, attempts: webhookDeliveries.attempts }),
    // Flat, with no column name twice: D1 returns a batch's rows as objects keyed by column name.
    db
      .select({
        id: webhookDeliveries.id,
        status: webhookDeliveries.status,
        eventId: webhookDeliveries.eventId,
        endpointId: webhookDeliveries.endpointId,
        agencyId: webhookDeliveries.agencyId,
        leasedUntil: webhookDeliveries.leasedUntil,
        replayId: webhookDeliveries.replayId,
        endpointFound: sql<string | null>`${webhookEndpoints.id}`.as("endpoint_found"),
        endpointAgencyId: sql<string | null>`${webhookEndpoints.agencyId}`.as("endpoint_agency_id"),
        url: webhookEndpoints.url,
        isActive: webhookEndpoints.isActive,
        secretSealed: webhookEndpoints.secretSealed,
        consecutiveFailures: webhookEndpoints.consecutiveFailures,
        pausedUntil: webhookEndpoints.pausedUntil,
        payload: webhookEndpoints.payload,
      })
      .from(webhookDeliveries)
      .leftJoin(webhookEndpoints, eq(webhookEndpoints.id, webhookDeliveries.endpointId))
      .where(inArray(webhookDeliveries.id, ids)),
    db
      .select()
      .from(events)
      .where(
        inArray(
          events.id,
          db
            .select({ id: webhookDeliveries.eventId })
            .from(webhookDeliveries)
            .where(and(inArray(webhookDeliveries.id, ids), eq(webhookDeliveries.leasedUntil, lease))),
        ),
      ),
  ]);
  return {
    lease,
    targets: new Map(
      rows.map(({ endpointFound, endpointAgencyId, url, isActive, secretSealed, ...delivery }) => {
        const { consecutiveFailures, pausedUntil, payload, ...rest } = delivery;
        const endpoint =
          endpointFound === null || endpointAgencyId === null || url === null || secretSealed === null
            ? null
            : {
                id: endpointFound,
                agencyId: endpointAgencyId,
                url,
                isActive: Boolean(isActive),
                secretSealed,
                consecutiveFailures: consecutiveFailures ?? 0,
                pausedUntil,
                payload: payload ?? "full",
              };
        return [delivery.id, { delivery: rest, endpoint }];
      }),
    ),
    leased: new Map(leased.map((r) => [r.id, r.attempts])),
    events: new Map(loaded.map((e) => [e.id, e])),
  };
}
