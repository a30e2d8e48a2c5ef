import { and, eq, exists, gte, inArray, or, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { keysetPage, type Page, type PageRequest } from "../../db/pages";
import {
  events,
  type WebhookDelivery,
  type WebhookDeliveryAttempt,
  type WebhookEndpoint,
  webhookDeliveries,
} from "../../db/schema";
import { retentionCutoff } from "../../domain/events/log";
import { attemptsOf } from "../delivery/attempt-history";
import { nextAttemptAt } from "../delivery/retry-schedule";

export interface DeliveryLogEntry {
  delivery: WebhookDelivery;
  eventType: string;
  /** Every attempt, oldest first. */
  attempts: WebhookDeliveryAttempt[];
  nextAttemptAt: string | null;
}

/**
 * The delivery log of one endpoint (already resolved inside the caller's agency), oldest
 * first, optionally by status or event, and only of `eventTypes` when given. It shows what
 * the retention sweep keeps: pending deliveries, and settled ones whose last activity is
 * inside the retention horizon. The attempts and the event types of a page are read with
 * one bound parameter each.
 */
export async function pageDeliveryLog(
  db: Db,
  endpoint: WebhookEndpoint,
  filters: { status?: WebhookDelivery["status"]; eventId?: string; eventTypes?: readonly string[] },
  req: PageRequest,
  now = Date.now(),
): Promise<Page<DeliveryLogEntry>> {
  const { status, eventId, eventTypes } = filters;
  // Deliveries of events the caller may read only (their types' read scopes), when it names them.
  const readable =
    eventTypes && inArray(events.eventType, sql`(SELECT value FROM json_each(${JSON.stringify(eventTypes)}))`);
  const where = and(
    eq(webhookDeliveries.endpointId, endpoint.id),
    eq(webhookDeliveries.agencyId, endpoint.agencyId),
    status ? eq(webhookDeliveries.status, status) : undefined,
    eventId !== undefined ? eq(webhookDeliveries.eventId, eventId) : undefined,
    or(eq(webhookDeliveries.status, "pending"), gte(webhookDeliveries.updatedAt, retentionCutoff(now))),
    exists(
      db
        .select({ one: sql`1` })
        .from(events)
        .where(and(eq(events.id, webhookDeliveries.eventId), readable)),
    ),
  );
  const page = await keysetPage(
    db,
    webhookDeliveries,
    `delivery-log:${endpoint.id}:${status ?? ""}:${eventId ?? ""}`,
    where,
    req,
  );
  const ids = page.rows.map((d) => d.id);
  const eventIds = [...new Set(page.rows.map((d) => d.eventId))];
  const [attempts, types] = await Promise.all([
    attemptsOf(db, ids),
    eventIds.length
      ? db
          .select({ id: events.id, eventType: events.eventType })
          .from(events)
          .where(inArray(events.id, sql`(SELECT value FROM json_each(${JSON.stringify(eventIds)}))`))
      : [],
  ]);
  const typeOf = new Map(types.map((e) => [e.id, e.eventType]));
  const attemptsByDelivery = Map.groupBy(attempts, (a) => a.deliveryId);
  return {
    nextCursor: page.nextCursor,
    rows: page.rows.map((delivery) => {
      const log = attemptsByDelivery.get(delivery.id) ?? [];
      return {
        delivery,
        eventType: typeOf.get(delivery.eventId) ?? "",
        attempts: log,
        nextAttemptAt: nextAttemptAt(delivery, log),
      };
    }),
  };
}
