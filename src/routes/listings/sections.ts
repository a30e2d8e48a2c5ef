import { type RouteHandler, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { Listing } from "../../db/schema";
import { findListing } from "../../domain/listings/reads";
import {
  floorplanValue,
  leavesSectionUnchanged,
  MAX_FLOORPLANS,
  nextMatterport,
  type SectionValue,
  writeSection,
} from "../../domain/listings/sections";
import { keepAsItIs } from "../../domain/versions";
import { ifMatch, setEtag } from "../../http/admission/conditional";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { ListingSchema, listingNumberParam, presentListing, WRITER_ROLES } from "../../schemas/listings";

const guard = {
  endpoint: "update_section",
  scope: "listings:write",
  roles: WRITER_ROLES,
  conditional: "write",
  errors: ["listing_not_found", "invalid_section_payload", "agency_quota_exceeded"],
} as const;
const url = (description: string) =>
  z.string().max(2048).openapi({ description, example: "https://cdn.example.com/plans/k3v9x2a-1.pdf" });
const answer = {
  200: {
    description: "The listing with its updated section.",
    content: json(ListingSchema),
  },
};

/** Room for a `replace` of the whole list: 50 URLs of up to 2048 characters. */
const FLOORPLAN_BODY_LIMIT = 128 * 1024;

export const floorplanRoute = publicRoute(
  { ...guard, bodyLimit: FLOORPLAN_BODY_LIMIT },
  {
    method: "patch",
    path: "/api/v1/listings/{listing_number}/sections/floorplan",
    operationId: "updateFloorplan",
    tags: ["Listings"],
    summary: "Set, replace or append the floorplan section",
    description:
      `The floorplan section is an ordered list of https URLs (at most ${MAX_FLOORPLANS}). \`set\` with \`url\` ` +
      "makes it that one URL; `append` with `url` adds one; `replace` with `urls` replaces the whole list. A payload " +
      "that breaks these rules is 422 `invalid_section_payload` naming the field. Emits `listing.section_modified`; " +
      "a `set` or `replace` that leaves the list as it is changes nothing: 200 with the listing, the same version " +
      "and ETag, and no event.",
    request: {
      params: listingNumberParam,
      body: {
        content: json(
          z
            .strictObject({
              operation: z.enum(["set", "replace", "append"]).openapi({ example: "append" }),
              url: url("Required by set and append.").optional(),
              urls: z
                .array(url("A floorplan URL."))
                .max(MAX_FLOORPLANS)
                .optional()
                .openapi({ description: "Required by replace: the whole new list." }),
            })
            .openapi("UpdateFloorplan"),
        ),
      },
    },
    responses: answer,
  },
);

/** Both section routes: find the caller's listing, derive the section's new value, write it with its event and mark. */
async function updateSection(
  c: Context<AppEnv>,
  listingNumber: string,
  section: "floorplan" | "matterport",
  operation: string,
  value: (listing: Listing) => SectionValue,
) {
  const ifVersion = ifMatch(c);
  const db = c.var.db;
  const listing = await findListing(db, c.get("caller").agencyId, listingNumber);
  const next = value(listing);
  const unchanged = leavesSectionUnchanged(listing, next);
  const mark = idempotencyMark(c, db, {
    status: 200,
    resourceType: "listing",
    resourceId: listing.id,
    ifChanged: !unchanged,
  });
  const updated = unchanged
    ? await keepAsItIs(db, listing, mark, ifVersion)
    : await writeSection(db, listing, section, operation, next, mark, ifVersion);
  setEtag(c, updated.version);
  return ListingSchema.parse(presentListing(updated, c.env.SITE_URL));
}

export const floorplanHandler: RouteHandler<typeof floorplanRoute, AppEnv> = async (c) => {
  const change = c.req.valid("json");
  const body = await updateSection(c, c.req.valid("param").listing_number, "floorplan", change.operation, (listing) =>
    floorplanValue(listing.floorplanUrls, change),
  );
  return c.json(body, 200);
};

export const matterportRoute = publicRoute(guard, {
  method: "patch",
  path: "/api/v1/listings/{listing_number}/sections/matterport",
  operationId: "updateMatterport",
  tags: ["Listings"],
  summary: "Set or remove the Matterport URL",
  description:
    "`set` with an https `url`, or `remove`. `set` without `url` is 422 `invalid_section_payload` naming `url`. " +
    "Emits `listing.section_modified`; a `set` of the URL already there, or a `remove` when there is none, changes " +
    "nothing: 200 with the listing, the same version and ETag, and no event.",
  request: {
    params: listingNumberParam,
    body: {
      content: json(
        z
          .strictObject({
            operation: z.enum(["set", "remove"]).openapi({ example: "set" }),
            url: z
              .string()
              .max(2048)
              .optional()
              .openapi({ description: "Required by set.", example: "https://my.matterport.com/show/?m=SxQL3iGyvQk" }),
          })
          .openapi("UpdateMatterport"),
      ),
    },
  },
  responses: answer,
});

export const matterportHandler: RouteHandler<typeof matterportRoute, AppEnv> = async (c) => {
  const change = c.req.valid("json");
  return c.json(
    await updateSection(c, c.req.valid("param").listing_number, "matterport", change.operation, () => ({
      matterportUrl: nextMatterport(change),
    })),
    200,
  );
};

export const otherSectionRoute = publicRoute(
  { endpoint: "update_section", scope: "listings:write", errors: ["section_not_exposed"], undocumented: true },
  {
    method: "patch",
    path: "/api/v1/listings/{listing_number}/sections/{section}",
    operationId: "updateOtherSection",
    tags: ["Listings"],
    summary: "Other sections (not exposed)",
    description:
      "Only `floorplan` and `matterport` can be changed through the API. Every other section (gallery, home, " +
      "features, documents, …) answers 404 `section_not_exposed`; change those in the dashboard.",
    request: { params: listingNumberParam.extend({ section: z.string().openapi({ example: "gallery" }) }) },
    responses: {},
  },
);

export const otherSectionHandler: RouteHandler<typeof otherSectionRoute, AppEnv> = (c) => {
  throw new DomainError("section_not_exposed", {
    details: { section: c.req.valid("param").section, exposed: ["floorplan", "matterport"] },
  });
};
