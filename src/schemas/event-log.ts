import { z } from "@hono/zod-openapi";
import type { EventRow } from "../db/schema";
import { EVENT_TYPE_NAMES, EVENT_TYPES, type EventType } from "../domain/events/catalog";
import { syncFields } from "../domain/events/sync";

const EVENT_ID_DESCRIPTION =
  "The event's id: the `event_id` (and `X-Webhook-Id` header) of every webhook delivery of this event, " +
  "first attempt, retries and replays alike. Deduplicate on it.";
const CREATED_AT_DESCRIPTION =
  "When the event happened, ISO 8601 UTC with milliseconds; the order of the list and its " +
  "`created_after`/`created_before` filters use it. A webhook delivery carries instead `timestamp` (Unix seconds " +
  "of that delivery attempt) and `nonce` (new on every attempt): they belong to one attempt, not to the event, " +
  "so they are not part of it here.";

export const SequenceSchema = z
  .number()
  .int()
  .min(1)
  .openapi({
    description:
      "The event's place in your agency's sequence: every event of the agency takes the next integer, in the same " +
      "transaction as the change it describes, so the sequence has no gap and no repeat. A receiver that sees 41 " +
      "after 39 asks GET /api/v1/events?after_sequence=39 for what it missed. Webhook deliveries carry the same value.",
    example: 42,
  });

export const ResourceRefSchema = z
  .object({
    type: z.enum(["listing", "user", "order"]).openapi({ description: "What kind of resource changed." }),
    id: z.string().openapi({
      description:
        "Its identifier as its routes take it: a listing's `listing_number`, a user's `id`, an order's `id` " +
        "(listed by GET /api/v1/listings/{listing_number}/orders).",
      example: "k3v9x2a",
    }),
    version: z
      .number()
      .int()
      .min(1)
      .openapi({
        description:
          "The resource's `version` once this change was written. A copy holding this version or a later one " +
          "already has the change; an older one is out of date (read the resource again, or apply the event).",
        example: 7,
      }),
  })
  .nullable()
  .openapi("ResourceRef", {
    description: "The resource the event changed and the version the change gave it; null for an event about none.",
  });

/** `listing.created` → `ListingCreatedEvent` */
const componentName = (type: EventType) =>
  `${type
    .split(/[._]/)
    .map((w) => w.charAt(0).toUpperCase() + w.slice(1))
    .join("")}Event`;

/** One event type's envelope: a delivery's body without its per-attempt fields, `data` from the catalog's schema. */
const variant = <T extends EventType>(type: T) =>
  z
    .object({
      event_id: z.string().openapi({ description: EVENT_ID_DESCRIPTION, example: "evt_0mhx3k2a1q8v2l0c9z7rj4" }),
      event_type: z.literal(type),
      api_version: z.string().openapi({
        description:
          "Version of the `data` shape this event was written with; its deliveries carry the same value. " +
          "The catalog lists each type's current version.",
        example: EVENT_TYPES[type].apiVersion,
      }),
      created_at: z.string().openapi({ description: CREATED_AT_DESCRIPTION, example: "2026-11-22T15:30:00.000Z" }),
      sequence: SequenceSchema,
      resource: ResourceRefSchema,
      data: EVENT_TYPES[type].data,
    })
    .openapi(componentName(type), { description: EVENT_TYPES[type].description });

type Variant = ReturnType<typeof variant<EventType>>;

/**
 * An event as the events API shows it: exactly the envelope its webhook deliveries carry
 * (`event_id`, `event_type`, `api_version`, `data`), with the event's `created_at` in
 * place of the per-attempt `timestamp` and `nonce`. `data` is documented by the same
 * schema as the catalog's `payload_schema` and the OpenAPI `webhooks` section.
 */
export const EventSchema = z
  .discriminatedUnion("event_type", EVENT_TYPE_NAMES.map(variant) as unknown as [Variant, ...Variant[]])
  .openapi("Event", {
    description:
      "An event of your agency, as its webhook deliveries carry it (whether or not an endpoint subscribed to " +
      "it): the delivery body without the per-attempt `timestamp` and `nonce`, with the event's `created_at` " +
      "instead. `event_id`, `event_type`, `api_version` and `data` are the same values, field for field.",
  });
export type EventItem = z.infer<typeof EventSchema>;

/**
 * What is checked when an event is sent: the envelope's fields, and `data` as it was
 * stored. `data` was parsed through its type's schema when the event was written; it is
 * shown as it was delivered, never re-shaped (an event written before a field was added
 * to its type lacks that field in its deliveries too).
 */
const StoredEventSchema = z.object({
  event_id: z.string(),
  event_type: z.enum(EVENT_TYPE_NAMES),
  api_version: z.string(),
  created_at: z.string(),
  sequence: z.number().int(),
  resource: z.object({ type: z.string(), id: z.string(), version: z.number().int() }).nullable(),
  data: z.record(z.string(), z.unknown()),
});

export const presentEvent = (e: EventRow): EventItem =>
  StoredEventSchema.parse({
    event_id: e.id,
    event_type: e.eventType,
    api_version: e.apiVersion,
    created_at: e.createdAt,
    ...syncFields(e),
    data: e.data,
  }) as EventItem;

export const eventIdParam = z.object({
  event_id: z.string().openapi({ description: "An event's `event_id`.", example: "evt_0mhx3k2a1q8v2l0c9z7rj4" }),
});

export const afterSequenceQuery = z.coerce
  .number()
  .int()
  .min(0)
  .max(Number.MAX_SAFE_INTEGER)
  .optional()
  .openapi({
    description:
      "The sync feed: only events whose `sequence` is above this, in sequence order, up to `last_sequence`. " +
      "0 reads from the agency's first event. Combines with `type`, not with `created_after` or `created_before`.",
    example: 39,
  });

export const EventPageSchema = z
  .object({
    data: z.array(EventSchema).openapi({
      description: "The events of this page: oldest first, or in sequence order with `after_sequence`.",
    }),
    next_cursor: z
      .string()
      .openapi({ description: "Cursor of the next page; the empty string marks the end.", example: "" }),
    last_sequence: z
      .number()
      .int()
      .min(0)
      .openapi({
        description:
          "Your agency's latest event sequence number when this page was read (0 before its first event), for a key " +
          "that may read every event type. For a key that may read only some, the newest sequence of those types " +
          "(never below `after_sequence`), so that it learns nothing of the events it may not read. With " +
          "`after_sequence`, the feed stops there: a reader that followed `next_cursor` to the end has seen every " +
          "event up to it that it may read. Note it before a resync, then continue with `after_sequence` set to it.",
        example: 42,
      }),
  })
  .openapi("EventPage");
