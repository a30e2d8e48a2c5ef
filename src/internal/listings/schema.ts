import { z } from "@hono/zod-openapi";
import { json } from "../../http/route";
import { ListingSchema } from "../../schemas/listings";

/** A listing named in a dashboard path: the agency first, then its listing number. */
export const listingParams = z.object({ agency_id: z.string(), listing_number: z.string() });

export const instant = z.iso.datetime({ offset: true });

export const listingAnswer = (description: string) => ({ 200: { description, content: json(ListingSchema) } }) as const;
