import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { keysetPage, type PageRequest } from "../db/pages";
import { type WebhookDelivery, webhookDeliveries } from "../db/schema";

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
