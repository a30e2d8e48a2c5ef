import { getOpenApiMetadata } from "@asteasolutions/zod-to-openapi";
import { z } from "zod";
import { type EventCategory, READ_SCOPE } from "../domain/events/access";
import { EVENT_TYPES, type EventType } from "../domain/events/catalog";

const cache = new Map<EventType, Record<string, unknown>>();

/**
 * The JSON Schema of an event type's `data`, generated from the schema that builds it,
 * with the descriptions and examples its fields declare. Objects stay open: within an
 * `api_version` fields may be added, so a receiver validating against this schema must
 * not refuse a field it does not know yet.
 */
export function payloadSchema(type: EventType): Record<string, unknown> {
  let schema = cache.get(type);
  if (!schema) {
    schema = z.toJSONSchema(EVENT_TYPES[type].data, {
      target: "draft-2020-12",
      unrepresentable: "any",
      override: (ctx) => {
        const json = ctx.jsonSchema as Record<string, unknown>;
        if (json.additionalProperties === false) delete json.additionalProperties;
        // A field's example is JSON Schema's `examples`, after its description.
        const { description, example } = getOpenApiMetadata(ctx.zodSchema as unknown as z.ZodType);
        delete json.example;
        if (typeof description === "string") json.description = description;
        if (example !== undefined) json.examples = [example];
      },
    }) as Record<string, unknown>;
    cache.set(type, schema);
  }
  return schema;
}

/** The whole delivery body of an event type: the envelope with this type's `data`. */
export function envelopeSchema(type: EventType): Record<string, unknown> {
  const { $schema: _, ...data } = payloadSchema(type);
  return {
    type: "object",
    required: ["event_id", "event_type", "api_version", "timestamp", "nonce", "data"],
    properties: {
      event_id: {
        type: "string",
        pattern: "^evt_",
        description: "Stable across retries; deduplicate on it.",
        examples: ["evt_0mhx3k2a1q8v2l0c9z7rj4"],
      },
      event_type: { type: "string", const: type },
      api_version: { type: "string", const: EVENT_TYPES[type].apiVersion },
      timestamp: {
        type: "integer",
        description: "Unix epoch seconds of this delivery attempt; refuse it when more than 5 minutes from your clock.",
        examples: [1795870800],
      },
      nonce: {
        type: "string",
        description: "Unique per delivery attempt; refuse one seen in the last 10 minutes.",
        examples: ["n_4f9c2a7e1b3d"],
      },
      sequence: {
        type: "integer",
        minimum: 1,
        description:
          "The event's place in your agency's sequence (no gap, no repeat); the same in the events API. " +
          "Absent on a test delivery, which is no event of the agency.",
        examples: [42],
      },
      resource: {
        type: ["object", "null"],
        required: ["type", "id", "version"],
        description: "The resource the event changed and its version after the change; null for an event about none.",
        properties: {
          type: { type: "string", enum: ["listing", "user", "order"] },
          id: { type: "string", examples: ["k3v9x2a"] },
          version: { type: "integer", minimum: 1, examples: [7] },
        },
      },
      data,
    },
  };
}

/** Which read scope opens which categories of events, for the descriptions: "`listings:read` (Listing, Media), …". */
export const READ_SCOPES_TEXT = Object.entries(
  Object.groupBy(Object.keys(READ_SCOPE) as EventCategory[], (category) => READ_SCOPE[category]),
)
  .map(([scope, categories]) => `\`${scope}\` (${categories!.join(", ")} events)`)
  .join(", ");
