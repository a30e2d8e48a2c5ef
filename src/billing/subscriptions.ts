import { and, eq, isNull } from "drizzle-orm";
import type { Db } from "../db/client";
import { type Subscription, subscriptions } from "../db/schema";
import { DomainError } from "../lib/errors";
import { nowIso } from "../lib/ids";

/** An agency's subscription; another agency's or an unknown id is `subscription_not_found`. */
export async function subscriptionOfAgency(db: Db, agencyId: string, id: string): Promise<Subscription> {
  const subscription = await db
    .select()
    .from(subscriptions)
    .where(and(eq(subscriptions.id, id), eq(subscriptions.agencyId, agencyId)))
    .get();
  if (!subscription) throw new DomainError("subscription_not_found", { details: { subscription_id: id } });
  return subscription;
}

/**
 * Records a subscription the provider started. One already recorded (under any agency,
 * or ended by an event that came first) is left as it is, and the statement changes no
 * row: an `outboxInsertIfChanged` right after it then emits nothing.
 */
export const recordSubscriptionStart = (
  db: Db,
  agencyId: string,
  s: { id: string; status: string; plan: string | null; startedAt: string },
) =>
  db
    .insert(subscriptions)
    .values({ id: s.id, agencyId, status: s.status, plan: s.plan, startedAt: s.startedAt })
    .onConflictDoNothing({ target: subscriptions.id })
    .returning({ id: subscriptions.id });

/**
 * Ends a subscription once. A subscription not recorded yet (started before the service
 * kept records, or whose start arrives later) is recorded as ended, so the provider's
 * word stands; one already ended, or recorded under another agency, changes no row, so an
 * `outboxInsertIfChanged` right after it emits nothing. The check is the statement's own.
 */
export const recordSubscriptionEnd = (db: Db, agencyId: string, id: string, cancelledAt: string) =>
  db
    .insert(subscriptions)
    .values({ id, agencyId, status: "cancelled", cancelledAt })
    .onConflictDoUpdate({
      target: subscriptions.id,
      set: { status: "cancelled", cancelledAt, updatedAt: nowIso() },
      setWhere: and(isNull(subscriptions.cancelledAt), eq(subscriptions.agencyId, agencyId)),
    })
    .returning({ id: subscriptions.id });
