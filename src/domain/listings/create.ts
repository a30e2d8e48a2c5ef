import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { type Listing, listings } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { newId, nowIso, randomAlnum } from "../../lib/ids";
import { isNotNullViolation, isUniqueViolation } from "../constraint";
import { outboxInsert } from "../events/outbox";
import { quotaRefusal } from "../quotas";
import { agencyOfPeople, checkPeople } from "./people";
import { publicUrl } from "./reads";

interface CreateListingInput {
  address: string;
  ownerUserId: string;
  agentOneId: string;
  agentTwoId?: string | null;
  listingNumber?: string;
}

/**
 * Creates a listing in `Coming Soon`, not activated, with its `listing.created` event in
 * the same batch. A server-minted number that collides is drawn again; a requested one
 * that exists is `listing_number_taken` (the unique index decides, not a prior read).
 * A person outside the agency fails the insert itself (see `agencyOfPeople`); only then
 * is the agency read, to name the fields.
 */
export async function createListing(
  db: Db,
  agencyId: string,
  siteUrl: string,
  input: CreateListingInput,
  alsoWrite: (listing: { id: string }) => BatchItem<"sqlite">[] = () => [],
): Promise<Listing> {
  const people = {
    owner_user_id: input.ownerUserId,
    agent_one_id: input.agentOneId,
    agent_two_id: input.agentTwoId,
  };
  const agency = agencyOfPeople(agencyId, people);
  for (let attempt = 0; ; attempt++) {
    const listingNumber = input.listingNumber ?? randomAlnum(7);
    const id = newId("lst");
    const createdAt = nowIso();
    const row = {
      id,
      agencyId: agency,
      listingNumber,
      address: input.address,
      ownerUserId: input.ownerUserId,
      agentOneId: input.agentOneId,
      agentTwoId: input.agentTwoId ?? null,
      createdAt,
      updatedAt: createdAt,
    };
    try {
      const [[listing]] = await db.batch([
        db.insert(listings).values(row).returning(),
        outboxInsert(db, agencyId, "listing.created", {
          listing_number: listingNumber,
          status: "Coming Soon",
          address: input.address,
          public_url: publicUrl(siteUrl, listingNumber),
          created_at: createdAt,
        }),
        ...alsoWrite({ id }),
      ]);
      return listing!;
    } catch (err) {
      if (isNotNullViolation(err, "listings.agency_id")) {
        // Throws for the people outside; when they have all joined since, the insert is tried again.
        await checkPeople(db, agencyId, people);
        if (attempt >= 5) throw err;
        continue;
      }
      if (!isUniqueViolation(err, "listings.")) return quotaRefusal(db, agencyId, err);
      if (input.listingNumber)
        throw new DomainError("listing_number_taken", { details: { listing_number: input.listingNumber } });
      if (attempt >= 5) throw err;
    }
  }
}
