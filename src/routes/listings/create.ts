import { type RouteHandler, z } from "@hono/zod-openapi";
import { createListing } from "../../domain/listings/create";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { created, json, publicRoute, setLocation } from "../../http/route";
import { withRenames } from "../../http/validation";
import { ListingSchema, presentListing, WRITER_ROLES } from "../../schemas/listings";

const userId = (description: string) =>
  z.string().min(1).max(64).openapi({ description, example: "usr_0mhx3k2a1q8v2l0c9z7rj4" });

const CreateListingBody = withRenames(
  z
    .strictObject({
      address: z
        .string()
        .trim()
        .min(1)
        .max(300)
        .openapi({ description: "Street address of the property.", example: "12 Harbour Street, Portside" }),
      owner_user_id: userId("The listing's owner: a user of your agency hierarchy."),
      agent_one_id: userId("The listing agent: a user of your agency hierarchy."),
      agent_two_id: userId("An optional second agent, inside your hierarchy.").optional(),
      listing_number: z
        .string()
        .regex(/^[a-z0-9]{7}$/, "7 lowercase letters or digits")
        .optional()
        .openapi({ description: "7 characters of [a-z0-9]. Minted by the server when omitted.", example: "k3v9x2a" }),
    })
    .openapi("CreateListing"),
  { agent_id: "agent_one_id", owner_id: "owner_user_id" },
);

export const createListingRoute = publicRoute(
  {
    endpoint: "create_listing",
    scope: "listings:write",
    roles: WRITER_ROLES,
    errors: ["listing_number_taken", "agent_not_in_hierarchy", "agency_quota_exceeded"],
  },
  {
    method: "post",
    path: "/api/v1/listings",
    operationId: "createListing",
    tags: ["Listings"],
    summary: "Create a listing",
    description:
      "Creates a listing in `Coming Soon`, not yet activated (activation and credit capture happen in the " +
      "dashboard). `address`, `owner_user_id` and `agent_one_id` are required. A `listing.created` webhook " +
      "follows within seconds.",
    request: { body: { content: json(CreateListingBody) } },
    responses: created("The created listing.", ListingSchema, "/api/v1/listings/k3v9x2a"),
  },
);

export const createListingHandler: RouteHandler<typeof createListingRoute, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const db = c.var.db;
  const listing = await createListing(
    db,
    c.get("caller").agencyId,
    c.env.SITE_URL,
    {
      address: b.address,
      ownerUserId: b.owner_user_id,
      agentOneId: b.agent_one_id,
      agentTwoId: b.agent_two_id,
      listingNumber: b.listing_number,
    },
    ({ id }) => idempotencyMark(c, db, { status: 201, resourceType: "listing", resourceId: id }),
  );
  setLocation(c, `/api/v1/listings/${listing.listingNumber}`);
  return c.json(ListingSchema.parse(presentListing(listing, c.env.SITE_URL)), 201);
};
