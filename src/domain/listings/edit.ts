import { eq } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { type Listing, listings } from "../../db/schema";
import { nowIso } from "../../lib/ids";
import { outboxInsert } from "../events/outbox";
import { quotaRefusal } from "../quotas";
import { nextVersion } from "../versions";
import { checkPeople } from "./people";

interface ListingEdit {
  address?: string;
  ownerUserId?: string;
  agentOneId?: string;
  agentTwoId?: string | null;
}

/** Dashboard edits of listing metadata; `listing.updated` names the fields that changed. */
export async function editListing(
  db: Db,
  listing: Listing,
  edit: ListingEdit,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Listing> {
  await checkPeople(db, listing.agencyId, {
    owner_user_id: edit.ownerUserId,
    agent_one_id: edit.agentOneId,
    agent_two_id: edit.agentTwoId,
  });
  const columns: Record<keyof ListingEdit, string> = {
    address: "address",
    ownerUserId: "owner_user_id",
    agentOneId: "agent_one_id",
    agentTwoId: "agent_two_id",
  };
  const changed = (Object.keys(columns) as (keyof ListingEdit)[]).filter(
    (k) => edit[k] !== undefined && edit[k] !== listing[k],
  );
  if (!changed.length) return listing;
  const next = { ...listing, ...Object.fromEntries(changed.map((k) => [k, edit[k]])) } as Listing;
  const [[updated]] = await db
    .batch([
      db
        .update(listings)
        .set({
          ...Object.fromEntries(changed.map((k) => [k, edit[k]])),
          updatedAt: nowIso(),
          version: nextVersion(listings.version),
        })
        .where(eq(listings.id, listing.id))
        .returning(),
      outboxInsert(db, listing.agencyId, "listing.updated", {
        listing_number: listing.listingNumber,
        changed_fields: changed.map((k) => columns[k]),
        address: next.address,
        owner_user_id: next.ownerUserId,
        agent_one_id: next.agentOneId,
        agent_two_id: next.agentTwoId,
      }),
      ...alsoWrite,
    ])
    .catch((err: unknown) => quotaRefusal(db, listing.agencyId, err));
  return updated!;
}
