import { and, asc, desc, eq, gt, inArray, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import {
  type EventRow,
  events,
  type IdempotencyMark,
  idempotencyMarks,
  listings,
  tours,
  type WebhookDeliveryAttempt,
  webhookDeliveries,
  webhookDeliveryAttempts,
} from "../db/schema";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";
import { nextAttemptAt } from "./delivery/retry-schedule";
import type { DeliveryLogEntry } from "./endpoints/delivery-log";

/** The most events one request shows; a write records one or two. */
export const TRAIL_MAX_EVENTS = 50;
/** The most deliveries shown per event (an agency has at most 16 active endpoints). */
export const TRAIL_MAX_DELIVERIES = 16;
/** The most attempts shown per delivery: its latest ones. */
export const TRAIL_MAX_ATTEMPTS = 20;

type TrailEvent = Pick<
  EventRow,
  "id" | "eventType" | "createdAt" | "sequence" | "resourceType" | "resourceId" | "resourceVersion"
>;

export interface RequestTrail {
  mark: IdempotencyMark;
  /** The marked resource's id as its routes take it (a listing's number, a tour's number), or null for none. */
  resourceId: string | null;
  events: { event: TrailEvent; deliveries: DeliveryLogEntry[] }[];
}

/**
 * What one committed write did: its commit mark, the events written under its trace and
 * each event's deliveries with their attempts. Scoped to `agencyId` when given (the
 * operator looks up any agency's); an expired mark is as good as gone. Four reads, each
 * with a fixed number of bound parameters, none of them a scan (and one more for a listing's
 * or tour's number).
 */
export async function requestTrail(db: Db, requestId: string, agencyId?: string): Promise<RequestTrail> {
  const mark = await db
    .select()
    .from(idempotencyMarks)
    .where(
      and(
        eq(idempotencyMarks.requestId, requestId),
        agencyId === undefined ? undefined : eq(idempotencyMarks.agencyId, agencyId),
        gt(idempotencyMarks.expiresAt, nowIso()),
      ),
    )
    .get();
  if (!mark) throw new DomainError("request_not_found");
  const written = mark.traceParent
    ? await db
        .select({
          id: events.id,
          eventType: events.eventType,
          createdAt: events.createdAt,
          sequence: events.sequence,
          resourceType: events.resourceType,
          resourceId: events.resourceId,
          resourceVersion: events.resourceVersion,
        })
        .from(events)
        .where(and(eq(events.agencyId, mark.agencyId), eq(events.traceParent, mark.traceParent)))
        .orderBy(asc(events.sequence))
        .limit(TRAIL_MAX_EVENTS)
    : [];
  const eventIds = JSON.stringify(written.map((e) => e.id));
  const deliveries = written.length
    ? await db
        .select()
        .from(webhookDeliveries)
        .where(
          and(
            inArray(webhookDeliveries.eventId, sql`(SELECT value FROM json_each(${eventIds}))`),
            eq(webhookDeliveries.agencyId, mark.agencyId),
          ),
        )
        .orderBy(asc(webhookDeliveries.createdAt), asc(webhookDeliveries.id))
        .limit(TRAIL_MAX_EVENTS * TRAIL_MAX_DELIVERIES)
    : [];
  const attempts = await latestAttempts(
    db,
    deliveries.map((d) => d.id),
  );
  const attemptsOf = Map.groupBy(attempts, (a) => a.deliveryId);
  const deliveriesOf = Map.groupBy(deliveries, (d) => d.eventId);
  return {
    mark,
    resourceId: await publicIdOf(db, mark),
    events: written.map((event) => ({
      event,
      deliveries: (deliveriesOf.get(event.id) ?? []).slice(0, TRAIL_MAX_DELIVERIES).map((delivery) => {
        const log = attemptsOf.get(delivery.id) ?? [];
        return { delivery, eventType: event.eventType, attempts: log, nextAttemptAt: nextAttemptAt(delivery, log) };
      }),
    })),
  };
}

/**
 * The id an integrator's routes take for the marked resource: listings and tours are
 * addressed by their numbers, everything else by the id the mark holds. A resource gone
 * since (a deleted tour) keeps the mark's id.
 */
async function publicIdOf(db: Db, mark: IdempotencyMark): Promise<string | null> {
  const { resourceType, resourceId, agencyId } = mark;
  if (!resourceType || !resourceId) return null;
  if (resourceType === "listing") {
    const row = await db
      .select({ number: listings.listingNumber })
      .from(listings)
      .where(and(eq(listings.id, resourceId), eq(listings.agencyId, agencyId)))
      .get();
    return row?.number ?? resourceId;
  }
  if (resourceType === "tour") {
    const row = await db
      .select({ number: tours.tourNumber })
      .from(tours)
      .where(and(eq(tours.id, resourceId), eq(tours.agencyId, agencyId)))
      .get();
    return row?.number ?? resourceId;
  }
  return resourceId;
}

/** The latest attempts of each delivery, at most TRAIL_MAX_ATTEMPTS each, oldest first; one bound list. */
async function latestAttempts(db: Db, deliveryIds: string[]): Promise<WebhookDeliveryAttempt[]> {
  if (!deliveryIds.length) return [];
  const ids = sql`(SELECT value FROM json_each(${JSON.stringify(deliveryIds)}))`;
  const ranked = db
    .select({
      id: webhookDeliveryAttempts.id,
      rank: sql<number>`row_number() OVER (PARTITION BY ${webhookDeliveryAttempts.deliveryId}
        ORDER BY ${webhookDeliveryAttempts.attemptedAt} DESC)`.as("rank"),
    })
    .from(webhookDeliveryAttempts)
    .where(inArray(webhookDeliveryAttempts.deliveryId, ids))
    .as("ranked");
  const rows = await db
    .select({ attempt: webhookDeliveryAttempts })
    .from(webhookDeliveryAttempts)
    .innerJoin(ranked, eq(ranked.id, webhookDeliveryAttempts.id))
    .where(sql`${ranked.rank} <= ${TRAIL_MAX_ATTEMPTS}`)
    .orderBy(desc(webhookDeliveryAttempts.attemptedAt));
  return rows.map((r) => r.attempt).reverse();
}
