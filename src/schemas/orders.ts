import { z } from "@hono/zod-openapi";
import type { ListingOrder } from "../db/schema";
import { versionField } from "./version";

export const OrderSchema = z
  .object({
    id: z.string().openapi({ example: "inv_0mhx3k2a1q8v2l0c9z7rj4" }),
    type: z
      .enum(["invoice", "payment"])
      .openapi({ description: "An invoice issued for the listing, or a payment received." }),
    invoice_id: z.string().nullable().openapi({ description: "For a payment, the invoice it settles.", example: null }),
    amount_minor: z
      .number()
      .int()
      .openapi({ description: "Amount in the currency's minor unit (cents).", example: 24900 }),
    currency: z.string().openapi({ description: "ISO 4217, lowercase.", example: "usd" }),
    status: z.string().openapi({
      description: "Invoices: draft, open, paid, void, uncollectible. Payments: succeeded, refunded, failed.",
      example: "paid",
    }),
    provider_reference: z
      .string()
      .nullable()
      .openapi({ description: "The payment provider's id of the record.", example: "in_1QxYz2" }),
    issued_at: z
      .string()
      .nullable()
      .openapi({ description: "When the invoice was issued.", example: "2026-11-20T09:00:00.000Z" }),
    paid_at: z.string().nullable().openapi({ description: "When it was paid.", example: "2026-11-21T10:30:00.000Z" }),
    created_at: z.string().openapi({ example: "2026-11-20T09:00:00.000Z" }),
    version: versionField,
  })
  .openapi("Order");

export const presentOrder = (o: ListingOrder) => ({
  id: o.id,
  type: o.kind,
  invoice_id: o.invoiceId,
  amount_minor: o.amountMinor,
  currency: o.currency,
  status: o.status,
  provider_reference: o.providerReference,
  issued_at: o.issuedAt,
  paid_at: o.paidAt,
  created_at: o.createdAt,
  version: o.version,
});
