import { and, eq, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../../db/client";
import { type Listing, listings } from "../../db/schema";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";
import { outboxInsertIfChanged } from "../events/outbox";
import { quotaRefusal } from "../quotas";
import { checkVersion, type IfVersion, nextVersion, versionIn } from "../versions";
import { refuseStale } from "./lifecycle";

export const EXPOSED_SECTIONS = ["floorplan", "matterport"] as const;
export const MAX_FLOORPLANS = 50;

export type FloorplanChange = { operation: "set" | "append" | "replace"; url?: string; urls?: string[] };
export type MatterportChange = { operation: "set" | "remove"; url?: string };

function invalid(field: string, reason: string): DomainError {
  return new DomainError("invalid_section_payload", { message: `${field}: ${reason}`, details: { field, reason } });
}

function httpsUrl(field: string, value: string | undefined): string {
  if (value === undefined) throw invalid(field, "is required for this operation");
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(field, "must be an absolute https URL");
  }
  if (url.protocol !== "https:") throw invalid(field, "must use https");
  return url.toString();
}

/**
 * The floorplan section is an ordered list of URLs: set makes it one URL, append adds one, replace
 * swaps the whole list.
 */
function nextFloorplans(current: string[], change: FloorplanChange): string[] {
  const { operation } = change;
  if (operation === "replace") {
    if (change.url !== undefined) throw invalid("url", "is not used by replace; send urls");
    if (change.urls === undefined) throw invalid("urls", "is required for replace");
    const urls = change.urls.map((u, i) => httpsUrl(`urls[${i}]`, u));
    if (urls.length > MAX_FLOORPLANS) throw invalid("urls", `holds at most ${MAX_FLOORPLANS} URLs`);
    return urls;
  }
  if (change.urls !== undefined) throw invalid("urls", `is not used by ${operation}; send url`);
  const url = httpsUrl("url", change.url);
  if (operation === "set") return [url];
  if (current.length >= MAX_FLOORPLANS)
    throw invalid("url", `the floorplan section holds at most ${MAX_FLOORPLANS} URLs`);
  return [...current, url];
}

/** Matterport is one URL: set it, or remove it. */
export function nextMatterport(change: MatterportChange): string | null {
  if (change.operation === "remove") {
    if (change.url !== undefined) throw invalid("url", "is not used by remove");
    return null;
  }
  return httpsUrl("url", change.url);
}

export type SectionValue = {
  floorplanUrls?: string[] | SQL;
  matterportUrl?: string | null;
  /** A condition the row must meet in the UPDATE itself, and the error when it does not. */
  guard?: { holds: SQL; refusal: DomainError };
};

/**
 * The floorplan section after `change`. An append is one statement, so two appends at once
 * both land, and the cap is checked in that statement, so together they never pass it.
 */
export function floorplanValue(current: string[], change: FloorplanChange): SectionValue {
  const next = nextFloorplans(current, change);
  if (change.operation !== "append") return { floorplanUrls: next };
  return {
    floorplanUrls: sql`json_insert(${listings.floorplanUrls}, '$[#]', ${next[next.length - 1]})`,
    guard: {
      holds: sql`json_array_length(${listings.floorplanUrls}) < ${MAX_FLOORPLANS}`,
      refusal: invalid("url", `the floorplan section holds at most ${MAX_FLOORPLANS} URLs`),
    },
  };
}

/**
 * True when `value` leaves the listing's section as it is: a `set`, `replace` or `remove` of
 * what the section already holds. Such a write changes nothing: no event, the same version.
 * An append always adds a URL, so it always changes the section.
 */
export function leavesSectionUnchanged(listing: Listing, value: SectionValue): boolean {
  if (value.guard) return false;
  const { floorplanUrls, matterportUrl } = value;
  if (floorplanUrls !== undefined) {
    if (!Array.isArray(floorplanUrls)) return false;
    const current = listing.floorplanUrls;
    if (floorplanUrls.length !== current.length || floorplanUrls.some((url, i) => url !== current[i])) return false;
  }
  return matterportUrl === undefined || matterportUrl === listing.matterportUrl;
}

/**
 * Writes a section and its `listing.section_modified` event together; a value whose guard
 * does not hold in the UPDATE is refused with the guard's error. The event is written only
 * when the listing row changed, and `alsoWrite` follows it, so a statement there
 * conditional on `changes()` runs only when the section was written.
 */
export async function writeSection(
  db: Db,
  listing: Listing,
  section: (typeof EXPOSED_SECTIONS)[number],
  operation: string,
  value: SectionValue,
  alsoWrite: BatchItem<"sqlite">[] = [],
  ifVersion?: IfVersion,
): Promise<Listing> {
  checkVersion(listing.version, ifVersion);
  const { guard, ...set } = value;
  const [[updated]] = await db
    .batch([
      db
        .update(listings)
        .set({ ...set, updatedAt: nowIso(), version: nextVersion(listings.version) })
        .where(
          and(
            eq(listings.id, listing.id),
            eq(listings.agencyId, listing.agencyId),
            guard?.holds,
            versionIn(listings.version, ifVersion),
          ),
        )
        .returning(),
      outboxInsertIfChanged(db, listing.agencyId, "listing.section_modified", {
        listing_number: listing.listingNumber,
        section,
        operation,
      }),
      ...alsoWrite,
    ])
    .catch((err: unknown) => quotaRefusal(db, listing.agencyId, err));
  if (!updated && ifVersion !== undefined) await refuseStale(db, listing.id, ifVersion);
  if (!updated) throw guard?.refusal ?? new DomainError("listing_not_found");
  return updated;
}
