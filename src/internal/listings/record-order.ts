import { type RouteHandler, z } from "@hono/zod-openapi";
import { findListing } from "../../domain/listings/reads";
import { recordOrder } from "../../domain/orders";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { OrderSchema, presentOrder } from "../../schemas/orders";
import { instant, listingParams } from "./schema";

export const recordOrderRoute = internalRoute(["listing_not_found", "order_already_recorded"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/orders",
  operationId: "recordOrder",
  tags: ["Listings"],
  summary: "Record an invoice or a payment for a listing",
  request: {
    params: listingParams,
    body: {
      content: json(
        z.strictObject({
          type: z.enum(["invoice", "payment"]),
          amount_minor: z.number().int().min(0),
          currency: z.string().regex(/^[A-Za-z]{3}$/, "a three-letter ISO 4217 currency code"),
          status: z.string().min(1).max(40),
          provider_reference: z.string().max(200).optional(),
          invoice_id: z.string().optional(),
          issued_at: instant.optional(),
          paid_at: instant.optional(),
        }),
      ),
    },
  },
  responses: { 201: { description: "The recorded order.", content: json(OrderSchema) } },
});

export const recordOrderHandler: RouteHandler<typeof recordOrderRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const b = c.req.valid("json");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const recorded = await recordOrder(db, listing, {
    kind: b.type,
    amountMinor: b.amount_minor,
    currency: b.currency,
    status: b.status,
    providerReference: b.provider_reference,
    invoiceId: b.invoice_id,
    issuedAt: b.issued_at ? new Date(b.issued_at).toISOString() : null,
    paidAt: b.paid_at ? new Date(b.paid_at).toISOString() : null,
  });
  return c.json(presentOrder(recorded), 201);
};
