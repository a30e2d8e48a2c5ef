import { and, eq } from "drizzle-orm";
import type { Db } from "../db/client";
import { keysetPage, type PageRequest } from "../db/pages";
import { type Listing, type ListingOrder, listingOrders } from "../db/schema";
import { DomainError } from "../lib/errors";
import { newId } from "../lib/ids";
import { isUniqueViolation } from "./constraint";

export interface OrderInput {
  kind: "invoice" | "payment";
  amountMinor: number;
  currency: string;
  status: string;
  providerReference?: string | null;
  invoiceId?: string | null;
  issuedAt?: string | null;
  paidAt?: string | null;
}

/** Records an invoice or payment for a listing; a provider reference is recorded once. */
export async function recordOrder(db: Db, listing: Listing, input: OrderInput): Promise<ListingOrder> {
  try {
    const [order] = await db
      .insert(listingOrders)
      .values({
        id: newId(input.kind === "invoice" ? "inv" : "pay"),
        agencyId: listing.agencyId,
        listingId: listing.id,
        kind: input.kind,
        invoiceId: input.invoiceId ?? null,
        amountMinor: input.amountMinor,
        currency: input.currency.toLowerCase(),
        status: input.status,
        providerReference: input.providerReference ?? null,
        issuedAt: input.issuedAt ?? null,
        paidAt: input.paidAt ?? null,
      })
      .returning();
    return order!;
  } catch (err) {
    if (isUniqueViolation(err, "listing_orders"))
      throw new DomainError("order_already_recorded", { details: { provider_reference: input.providerReference } });
    throw err;
  }
}

/** A listing's invoices and payments, oldest first. */
export function pageOrders(db: Db, listing: Listing, req: PageRequest) {
  const where = and(eq(listingOrders.listingId, listing.id), eq(listingOrders.agencyId, listing.agencyId));
  return keysetPage(db, listingOrders, `orders:${listing.id}`, where, req);
}
