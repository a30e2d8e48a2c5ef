import { and, eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { agencies, listingOrders, listings, providerEvents } from "../db/schema";
import { isUniqueViolation } from "../domain/constraint";
import { outboxInsert, outboxInsertIfChanged } from "../domain/events/outbox";
import { timingSafeEqual } from "../lib/crypto/crypto";
import { hex } from "../lib/crypto/encoding";
import { hmacSha256 } from "../lib/crypto/hmac";
import { newId } from "../lib/ids";
import { recordSubscriptionEnd, recordSubscriptionStart } from "./subscriptions";

const STRIPE_TOLERANCE_SECONDS = 300;

/**
 * Stripe's v1 scheme: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=…]`, where hex is
 * HMAC-SHA256 of `<t>.<raw body>` keyed with the endpoint secret. Refused past 5 minutes.
 */
export async function verifyStripeSignature(
  rawBody: string,
  header: string | undefined,
  secret: string,
  nowSeconds = Math.floor(Date.now() / 1000),
): Promise<boolean> {
  if (!header) return false;
  const parts = header.split(",").map((p) => p.split("=", 2) as [string, string | undefined]);
  const t = Number(parts.find(([k]) => k === "t")?.[1]);
  const signatures = parts.filter(([k]) => k === "v1").map(([, v]) => v ?? "");
  if (!Number.isInteger(t) || !signatures.length || Math.abs(nowSeconds - t) > STRIPE_TOLERANCE_SECONDS) return false;
  const expected = hex(await hmacSha256(secret, `${t}.${rawBody}`));
  return signatures.some((s) => timingSafeEqual(s, expected));
}

/** The fields of Stripe's invoice and subscription objects that are read here; all optional, as sent. */
interface StripeObject {
  metadata?: Record<string, unknown>;
  status_transitions?: { paid_at?: unknown };
  items?: { data?: { price?: { id?: string; nickname?: string | null } }[] };
  [field: string]: unknown;
}

export interface StripeEvent {
  id: string;
  type: string;
  data: { object: StripeObject };
}

const iso = (seconds: unknown) =>
  new Date((typeof seconds === "number" ? seconds : Date.now() / 1000) * 1000).toISOString();

export type StripeOutcome = "applied" | "duplicate" | "ignored";

/**
 * Applies a verified Stripe event: `invoice.paid` records the invoice and its payment on
 * the listing's orders and emits `invoice.payment_made`; subscription creation and
 * deletion record the subscription and emit `subscription.created` / `subscription.cancelled`,
 * each once per subscription. The agency (and listing) come from the object's metadata
 * (`agency_id`, `listing_number`). Each Stripe event is applied once, in one batch with its
 * effects; one that changed nothing (a subscription started or ended already) is `ignored`.
 */
export async function applyStripeEvent(
  db: Db,
  event: StripeEvent,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<StripeOutcome> {
  const object = event.data?.object ?? {};
  const agencyId = object.metadata?.agency_id as string | undefined;
  if (!agencyId) return "ignored";
  // Metadata names an agency that is not ours (another environment's, or a typo): nothing to record.
  if (!(await db.select({ id: agencies.id }).from(agencies).where(eq(agencies.id, agencyId)).get())) return "ignored";
  const seen = db.insert(providerEvents).values({ id: event.id, provider: "stripe", type: event.type });
  let writes: BatchItem<"sqlite">[];
  // A subscription's start or end, which changes nothing when it was recorded already.
  let guarded: BatchItem<"sqlite"> | undefined;
  switch (event.type) {
    case "invoice.paid": {
      const listingNumber = (object.metadata?.listing_number as string | undefined) ?? null;
      const listing = listingNumber
        ? await db
            .select()
            .from(listings)
            .where(and(eq(listings.agencyId, agencyId), eq(listings.listingNumber, listingNumber)))
            .get()
        : undefined;
      const paidAt = iso(object.status_transitions?.paid_at);
      const amount = Number(object.amount_paid ?? object.amount_due ?? 0);
      const currency = String(object.currency ?? "usd").toLowerCase();
      const invoiceId = newId("inv");
      writes = [];
      if (listing) {
        const row = { agencyId, listingId: listing.id, amountMinor: amount, currency };
        writes.push(
          db
            .insert(listingOrders)
            .values({
              ...row,
              id: invoiceId,
              kind: "invoice",
              status: "paid",
              providerReference: String(object.id),
              issuedAt: iso(object.created),
              paidAt,
            })
            .onConflictDoNothing(),
          db
            .insert(listingOrders)
            .values({
              ...row,
              id: newId("pay"),
              kind: "payment",
              invoiceId,
              status: "succeeded",
              providerReference: String(object.payment_intent ?? `pay_for_${object.id}`),
              paidAt,
            })
            .onConflictDoNothing(),
        );
      }
      // After the order rows: the event names the invoice's order and its version.
      writes.push(
        outboxInsert(db, agencyId, "invoice.payment_made", {
          invoice_id: String(object.id),
          listing_number: listing ? listing.listingNumber : null,
          amount_minor: amount,
          currency,
          provider_reference: String(object.id),
          paid_at: paidAt,
        }),
      );
      break;
    }
    case "customer.subscription.created": {
      const started = {
        id: String(object.id),
        plan: object.items?.data?.[0]?.price?.nickname ?? object.items?.data?.[0]?.price?.id ?? null,
        status: String(object.status ?? "active"),
        startedAt: iso(object.start_date),
      };
      guarded = recordSubscriptionStart(db, agencyId, started);
      writes = [
        guarded,
        outboxInsertIfChanged(db, agencyId, "subscription.created", {
          subscription_id: started.id,
          plan: started.plan,
          status: started.status,
          started_at: started.startedAt,
        }),
      ];
      break;
    }
    case "customer.subscription.deleted": {
      const cancelledAt = iso(object.ended_at ?? object.canceled_at);
      guarded = recordSubscriptionEnd(db, agencyId, String(object.id), cancelledAt);
      writes = [
        guarded,
        outboxInsertIfChanged(db, agencyId, "subscription.cancelled", {
          subscription_id: String(object.id),
          cancelled_at: cancelledAt,
        }),
      ];
      break;
    }
    default:
      return "ignored";
  }
  try {
    const [, ...results] = await db.batch([seen, ...writes, ...alsoWrite]);
    if (guarded && !(results[writes.indexOf(guarded)] as unknown[]).length) return "ignored";
    return "applied";
  } catch (err) {
    if (isUniqueViolation(err, "provider_events")) return "duplicate";
    throw err;
  }
}
