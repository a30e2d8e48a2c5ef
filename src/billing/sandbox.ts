import { randomAlnum } from "../lib/ids";
import type { StripeEvent } from "./stripe";

/**
 * Stripe-format events for the sandbox's test helpers, shaped like the test-mode events
 * Stripe sends to POST /hooks/stripe (`livemode: false`), with the agency (and listing)
 * in the object's metadata. The helpers apply them with the same function as verified
 * events from Stripe, so what they record and emit is exactly what a payment would.
 */
const STRIPE_API_VERSION = "2024-06-20";
export const STRIPE_SUBSCRIPTION_ID = /^sub_[A-Za-z0-9]{1,64}$/;

const stripeId = (prefix: string) => `${prefix}_${randomAlnum(24)}`;

function event(type: string, object: Record<string, unknown>, now: number): StripeEvent {
  return {
    id: stripeId("evt"),
    object: "event",
    api_version: STRIPE_API_VERSION,
    created: now,
    livemode: false,
    type,
    data: { object },
  } as StripeEvent;
}

const seconds = (at: Date) => Math.floor(at.getTime() / 1000);

/** `invoice.paid` for an invoice of the listing, paid now. */
export function invoicePaid(
  agencyId: string,
  listingNumber: string,
  amount: { amountMinor: number; currency: string },
  at = new Date(),
): StripeEvent {
  const now = seconds(at);
  return event(
    "invoice.paid",
    {
      id: stripeId("in"),
      object: "invoice",
      status: "paid",
      amount_due: amount.amountMinor,
      amount_paid: amount.amountMinor,
      currency: amount.currency.toLowerCase(),
      created: now,
      payment_intent: stripeId("pi"),
      status_transitions: { paid_at: now },
      metadata: { agency_id: agencyId, listing_number: listingNumber },
    },
    now,
  );
}

/** `customer.subscription.created` for a new active subscription of the agency. */
export function subscriptionCreated(agencyId: string, plan: string | null, at = new Date()): StripeEvent {
  const now = seconds(at);
  return event(
    "customer.subscription.created",
    {
      id: stripeId("sub"),
      object: "subscription",
      status: "active",
      start_date: now,
      items: { object: "list", data: [{ price: { id: stripeId("price"), nickname: plan } }] },
      metadata: { agency_id: agencyId },
    },
    now,
  );
}

/** `customer.subscription.deleted`: the agency's subscription ended now. */
export function subscriptionDeleted(agencyId: string, subscriptionId: string, at = new Date()): StripeEvent {
  const now = seconds(at);
  return event(
    "customer.subscription.deleted",
    {
      id: subscriptionId,
      object: "subscription",
      status: "canceled",
      canceled_at: now,
      ended_at: now,
      metadata: { agency_id: agencyId },
    },
    now,
  );
}
