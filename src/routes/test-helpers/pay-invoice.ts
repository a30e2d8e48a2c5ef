import { type RouteHandler, z } from "@hono/zod-openapi";
import { invoicePaid } from "../../billing/sandbox";
import { applyStripeEvent } from "../../billing/stripe";
import { findListing } from "../../domain/listings/reads";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { listingNumberParam } from "../../schemas/listings";
import { outsideHelperGuard, StripeEventSchema, TEST_HELPERS_TAG } from "./schema";

const PaidInvoiceSchema = z.object({
  invoice_id: z.string().openapi({
    description: "The payment provider's invoice id: `data.invoice_id` of `invoice.payment_made`.",
    example: "in_3k2a1q8v2l0c9z7rj4mhx0ab",
  }),
  listing_number: z.string().openapi({ example: "k3v9x2a" }),
  amount_minor: z.number().int().openapi({ example: 24900 }),
  currency: z.string().openapi({ example: "usd" }),
  stripe_event: StripeEventSchema,
});

export const payInvoiceRoute = publicRoute(outsideHelperGuard("orders:read", ["listing_not_found"]), {
  method: "post",
  path: "/api/v1/test_helpers/listings/{listing_number}/invoices/pay",
  operationId: "testHelperPayInvoice",
  tags: [TEST_HELPERS_TAG],
  summary: "Pay an invoice of a listing (emits invoice.payment_made)",
  description:
    "What the payment provider reports when an invoice of the listing is paid: a Stripe-format `invoice.paid` " +
    "event (test mode) for a new invoice is applied exactly as `POST /hooks/stripe` applies a verified one, so " +
    "the invoice and its payment appear in `GET /api/v1/listings/{listing_number}/orders` and " +
    "`invoice.payment_made` is emitted.",
  request: {
    params: listingNumberParam,
    body: {
      content: json(
        z.strictObject({
          amount_minor: z
            .number()
            .int()
            .min(0)
            .max(100_000_000)
            .default(24_900)
            .openapi({ description: "Amount in the currency's minor unit; 24900 when omitted.", example: 24900 }),
          currency: z
            .string()
            .regex(/^[A-Za-z]{3}$/, "a three-letter ISO 4217 currency code")
            .default("usd")
            .openapi({ description: "ISO 4217 code; `usd` when omitted.", example: "usd" }),
        }),
      ),
    },
  },
  responses: { 200: { description: "The paid invoice.", content: json(PaidInvoiceSchema) } },
});

export const payInvoiceHandler: RouteHandler<typeof payInvoiceRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const b = c.req.valid("json");
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const event = invoicePaid(listing.agencyId, listing.listingNumber, {
    amountMinor: b.amount_minor,
    currency: b.currency,
  });
  const outcome = await applyStripeEvent(db, event, idempotencyMark(c, db, { status: 200 }));
  return c.json(
    PaidInvoiceSchema.parse({
      invoice_id: event.data.object.id,
      listing_number: listing.listingNumber,
      amount_minor: b.amount_minor,
      currency: b.currency.toLowerCase(),
      stripe_event: { id: event.id, type: event.type, outcome },
    }),
    200,
  );
};
