import { z } from "@hono/zod-openapi";
import type { Listing } from "../db/schema";
import { LISTING_STATUSES } from "../domain/listings/lifecycle";
import { publicUrl } from "../domain/listings/reads";
import { versionField } from "./version";

export const listingNumberParam = z.object({
  listing_number: z
    .string()
    .openapi({ description: "The listing's identifier: 7 characters of [a-z0-9].", example: "k3v9x2a" }),
});

export const ListingSchema = z
  .object({
    listing_number: z.string().openapi({
      description: "7 characters of [a-z0-9], unique within your agency; the identifier in every path.",
      example: "k3v9x2a",
    }),
    address: z
      .string()
      .openapi({ description: "Street address of the property.", example: "12 Harbour Street, Portside" }),
    status: z
      .enum(LISTING_STATUSES)
      .openapi({ description: "Lifecycle status; `Coming Soon` at creation.", example: "Coming Soon" }),
    is_activated: z.boolean().openapi({
      description: "False at creation; activation and credit capture happen in the dashboard.",
      example: false,
    }),
    public_url: z
      .string()
      .openapi({ description: "The listing's public page.", example: "https://listings.example.com/property/k3v9x2a" }),
    owner_user_id: z
      .string()
      .openapi({ description: "A user of your agency hierarchy.", example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
    agent_one_id: z
      .string()
      .openapi({ description: "A user of your agency hierarchy.", example: "usr_0mhx3k2a1q8v2l0c9z7rj5" }),
    agent_two_id: z
      .string()
      .nullable()
      .openapi({ description: "Optional second agent, inside your hierarchy.", example: null }),
    sections: z
      .object({
        floorplan: z.array(z.string()).openapi({
          description: "Ordered floorplan URLs.",
          example: ["https://cdn.example.com/plans/k3v9x2a-1.pdf"],
        }),
        matterport: z.string().nullable().openapi({
          description: "The Matterport tour URL.",
          example: "https://my.matterport.com/show/?m=SxQL3iGyvQk",
        }),
      })
      .openapi({ description: "The sections this API can change." }),
    cancelled_at: z
      .string()
      .nullable()
      .openapi({ description: "When the listing was cancelled; null otherwise.", example: null }),
    created_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-11-22T12:00:00.000Z" }),
    updated_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-11-22T12:00:00.000Z" }),
    version: versionField,
  })
  .openapi("Listing");

export type ListingBody = z.infer<typeof ListingSchema>;

export const presentListing = (l: Listing, siteUrl: string): ListingBody => ({
  listing_number: l.listingNumber,
  address: l.address,
  status: l.status as ListingBody["status"],
  is_activated: l.isActivated,
  public_url: publicUrl(siteUrl, l.listingNumber),
  owner_user_id: l.ownerUserId,
  agent_one_id: l.agentOneId,
  agent_two_id: l.agentTwoId,
  sections: { floorplan: l.floorplanUrls, matterport: l.matterportUrl },
  cancelled_at: l.cancelledAt,
  created_at: l.createdAt,
  updated_at: l.updatedAt,
  version: l.version,
});

/** Writes are refused to viewers; every other role of the hierarchy may write. */
export const WRITER_ROLES = [
  "super_admin",
  "admin",
  "media_agency",
  "broker",
  "team_lead",
  "agent",
  "assistant",
] as const;
