import { z } from "@hono/zod-openapi";
import { MAX_QUOTA, QUOTA_RESOURCE_NAMES, type QuotaResource, type QuotaState } from "../domain/quotas";

const RESOURCE_DESCRIPTIONS: Record<QuotaResource, string> = {
  tours: "Tours the agency holds (a deleted tour frees its place).",
  tour_bytes:
    "Bytes of the tours' text the client writes: address, city, state, zipcode, mls_number, description, " +
    "images and virtual_tour_url.",
  listings: "Listings the agency holds, cancelled ones included.",
  listing_bytes: "Bytes of the listings' address, floorplan URLs and matterport URL.",
  media_uploads: "Media uploads the agency has requested, whatever became of them.",
  media_bytes:
    "Bytes the agency keeps in storage: the declared `size_bytes` of its uploads under way or completed (an " +
    "expired or aborted upload frees its bytes). An upload whose size would pass it is refused.",
  api_keys: "API keys of the agency, revoked ones included.",
  users: "Users of the agency, deactivated ones included.",
  appointments: "Shoot appointments of the agency's listings, cancelled ones included.",
  events:
    "Events the agency's changes wrote, within the retention window. While it is reached, a write that would emit " +
    "an event is refused.",
  webhook_deliveries:
    "Webhook deliveries of the agency's events (one per event and subscribed endpoint), within the retention " +
    "window. While it is reached, a write that would emit an event is refused.",
  webhook_attempts: "Attempts of those deliveries. While it is reached, a write that would emit an event is refused.",
  idempotency_marks:
    "Commit marks of the agency's idempotent writes of the last 24 hours. While it is reached, writes are refused.",
  tour_search_grams:
    "Entries of the tours' address search index (up to one per character of an address, plus one). A tour whose " +
    "address would pass it is refused.",
};

const QuotaSchema = z
  .object({
    unit: z.enum(["rows", "bytes"]).openapi({ description: "What `limit` and `used` count.", example: "rows" }),
    limit: z.number().int().openapi({
      description: "The most the agency may hold; a write that would pass it is refused (409 agency_quota_exceeded).",
      example: 100_000,
    }),
    used: z.number().int().openapi({ description: "What the agency holds now.", example: 1_250 }),
    remaining: z.number().int().openapi({ description: "`limit` minus `used`, never below 0.", example: 98_750 }),
  })
  .openapi("Quota");

const quotaFields = Object.fromEntries(
  QUOTA_RESOURCE_NAMES.map((name) => [name, QuotaSchema.openapi({ description: RESOURCE_DESCRIPTIONS[name] })]),
) as Record<QuotaResource, typeof QuotaSchema>;

/** Every quota of an agency, by resource name. */
export const QuotasSchema = z.object(quotaFields).openapi("Quotas", {
  description: "What the agency may store, and what it holds, by resource.",
});

export const presentQuotas = (states: QuotaState[]) =>
  Object.fromEntries(
    states.map((q) => [
      q.resource,
      { unit: q.unit, limit: q.limit, used: q.used, remaining: Math.max(0, q.limit - q.used) },
    ]),
  ) as z.infer<typeof QuotasSchema>;

const quotaInput = z.number().int().min(0).max(MAX_QUOTA).nullable().optional();

/** Quota overrides as the internal API takes them: a number sets one, null returns it to the default. */
export const QuotaOverridesInput = z
  .strictObject(
    Object.fromEntries(QUOTA_RESOURCE_NAMES.map((name) => [name, quotaInput])) as Record<
      QuotaResource,
      typeof quotaInput
    >,
  )
  .openapi({
    description:
      "The agency's own quotas by resource; null returns one to the default. A quota below what the agency " +
      "already holds is allowed: nothing is removed, and new writes of that resource are refused until usage " +
      "is below it.",
    example: { tours: 200_000, tour_bytes: 536_870_912, users: null },
  });
