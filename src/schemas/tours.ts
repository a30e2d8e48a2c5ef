import { z } from "@hono/zod-openapi";
import type { Tour } from "../db/schema";
import { TOUR_STATUSES } from "../domain/tours";
import { renderedUrl } from "./urls";
import { versionField } from "./version";

export const tourNumberParam = z.object({
  tourNumber: z.string().openapi({ description: "The tour's number: 8 characters of [a-z0-9].", example: "q7x2m9ka" }),
});

const IMAGE_URL_EXAMPLE = "https://cdn.example.com/tours/q7x2m9ka/front.jpg";
const caption = z
  .string()
  .max(300)
  .optional()
  .openapi({ description: "Optional caption.", example: "Front elevation" });

const ImageSchema = z
  .object({
    url: z.string().openapi({ description: "Image URL (https).", example: IMAGE_URL_EXAMPLE }),
    caption,
  })
  .openapi("TourImage");

/** An image as a request sends it: an https URL and a caption, nothing else. */
const ImageInput = z
  .strictObject({
    url: renderedUrl().openapi({
      description: "Image URL: https only (javascript:, data:, file: and http: are refused).",
      example: IMAGE_URL_EXAMPLE,
    }),
    caption,
  })
  .openapi("TourImageInput");

const statusField = z
  .enum(TOUR_STATUSES)
  .openapi({ description: "`active` (published), `inactive` (hidden) or `archived`.", example: "active" });

export const TourSummarySchema = z
  .object({
    id: z.string().openapi({ example: "tour_0mhx3k2a1q8v2l0c9z7rj4" }),
    tour_number: z.string().openapi({ example: "q7x2m9ka" }),
    address: z.string().openapi({ example: "12 Harbour Street" }),
    city: z.string().openapi({ example: "Portside" }),
    state: z.string().openapi({ example: "CA" }),
    status: statusField,
    created_at: z.string().openapi({ example: "2026-11-22T12:00:00.000Z" }),
    version: versionField,
  })
  .openapi("TourSummary");

export const TourSchema = TourSummarySchema.extend({
  zipcode: z.string().openapi({ example: "94110" }),
  mls_number: z.string().nullable().openapi({ example: "ML81234567" }),
  price: z
    .number()
    .int()
    .nullable()
    .openapi({ description: "Asking price in whole currency units.", example: 1250000 }),
  bedrooms: z.number().int().nullable().openapi({ example: 3 }),
  bathrooms: z.number().int().nullable().openapi({ example: 2 }),
  sqft: z.number().int().nullable().openapi({ example: 1850 }),
  description: z.string().nullable().openapi({ example: "Sunny corner home near the harbour." }),
  images: z.array(ImageSchema).openapi({ description: "Images in display order." }),
  virtual_tour_url: z.string().nullable().openapi({ example: "https://my.matterport.com/show/?m=SxQL3iGyvQk" }),
  updated_at: z.string().openapi({ example: "2026-11-22T12:00:00.000Z" }),
}).openapi("Tour");

export const CreateTourBody = z
  .strictObject({
    address: z.string().trim().min(1).max(300).openapi({ example: "12 Harbour Street" }),
    city: z.string().trim().min(1).max(100).openapi({ example: "Portside" }),
    state: z.string().trim().min(1).max(100).openapi({ example: "CA" }),
    zipcode: z.string().trim().min(1).max(20).openapi({ example: "94110" }),
    mls_number: z.string().max(50).optional(),
    price: z.number().int().min(0).optional(),
    bedrooms: z.number().int().min(0).max(100).optional(),
    bathrooms: z.number().int().min(0).max(100).optional(),
    sqft: z.number().int().min(0).optional(),
    description: z.string().max(5000).optional(),
    images: z.array(ImageInput).max(100).optional(),
    virtual_tour_url: renderedUrl()
      .optional()
      .openapi({ description: "https only.", example: "https://my.matterport.com/show/?m=SxQL3iGyvQk" }),
  })
  .openapi("CreateTour");

export const UpdateTourBody = z
  .strictObject({
    status: statusField.optional(),
    price: z.number().int().min(0).nullable().optional().openapi({ example: 1199000 }),
    description: z.string().max(5000).nullable().optional(),
  })
  .openapi("UpdateTour");

export const presentSummary = (t: Tour) => ({
  id: t.id,
  tour_number: t.tourNumber,
  address: t.address,
  city: t.city,
  state: t.state,
  status: t.status as (typeof TOUR_STATUSES)[number],
  created_at: t.createdAt,
  version: t.version,
});

export const presentTour = (t: Tour) => ({
  ...presentSummary(t),
  zipcode: t.zipcode,
  mls_number: t.mlsNumber,
  price: t.price,
  bedrooms: t.bedrooms,
  bathrooms: t.bathrooms,
  sqft: t.sqft,
  description: t.description,
  images: t.images as { url: string; caption?: string }[],
  virtual_tour_url: t.virtualTourUrl,
  updated_at: t.updatedAt,
});
