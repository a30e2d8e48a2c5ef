import { z } from "@hono/zod-openapi";
import { readScopeOf } from "../domain/events/access";
import { EVENT_TYPE_NAMES, type EventType } from "../domain/events/catalog";
import { syncFields } from "../domain/events/sync";
import type { Scope } from "../domain/roles";
import type { RequestTrail } from "../webhooks/request-trail";
import { TRAIL_MAX_ATTEMPTS, TRAIL_MAX_DELIVERIES, TRAIL_MAX_EVENTS } from "../webhooks/request-trail";
import { DeliveryLogEntrySchema, presentDeliveryLogEntry } from "./delivery-log";
import { ResourceRefSchema, SequenceSchema } from "./event-log";

const REQUEST_ID_EXAMPLE = "req_0mhx3k2a1q8v2l0c9z7rj4";

export const requestIdParam = z.object({
  request_id: z
    .string()
    .openapi({ description: "The `X-Request-Id` of a write's answer.", example: REQUEST_ID_EXAMPLE }),
});

const RequestEventSchema = z
  .object({
    event_id: z.string().openapi({
      description: "The event's id; read it whole with GET /api/v1/events/{event_id}.",
      example: "evt_0mhx3k2a1q8v2l0c9z7rj4",
    }),
    event_type: z.enum(EVENT_TYPE_NAMES).openapi({ example: "listing.created" }),
    created_at: z
      .string()
      .openapi({ description: "When the event was written, ISO 8601 UTC.", example: "2026-11-22T15:30:00.000Z" }),
    sequence: SequenceSchema,
    resource: ResourceRefSchema,
    deliveries: z.array(DeliveryLogEntrySchema).openapi({
      description:
        `Its webhook deliveries, oldest first, at most ${TRAIL_MAX_DELIVERIES}, as the endpoint's delivery log shows ` +
        `them; \`attempt_log\` holds the latest ${TRAIL_MAX_ATTEMPTS} attempts. Empty when no endpoint took it.`,
    }),
  })
  .openapi("RequestEvent");

export const RequestTrailSchema = z
  .object({
    request_id: z.string().openapi({ example: REQUEST_ID_EXAMPLE }),
    agency_id: z.string().openapi({ example: "agy_0mhx3k2a1q8v2l0c9z7rj4" }),
    created_at: z.string().openapi({
      description: "When the request committed its change, ISO 8601 UTC.",
      example: "2026-11-22T15:30:00.000Z",
    }),
    operation_id: z
      .string()
      .nullable()
      .openapi({ description: "The route, by its operation id in the API description.", example: "createListing" }),
    method: z.string().nullable().openapi({ example: "POST" }),
    path: z.string().nullable().openapi({ example: "/api/v1/listings" }),
    status: z.number().int().openapi({ description: "The HTTP status it answered.", example: 201 }),
    idempotency_key: z
      .string()
      .nullable()
      .openapi({
        description:
          "The `X-Idempotency-Key` it carried; null when your key may not read the resource it names (its read " +
          "scope), like `resource`.",
        example: "5f0c1d9e-8a3b-4c2e-9f6d-2b7a1e4c8d03",
      }),
    idempotency_outcome: z.literal("new").openapi({
      description:
        "Always `new`: only the request that ran the change is kept. A replay of it answers the same, with its " +
        "own request id, and is not kept.",
      example: "new",
    }),
    resource: z
      .object({
        type: z.string().openapi({ example: "listing" }),
        id: z.string().openapi({
          description: "The id its routes take: a listing's `listing_number`, a tour's `tour_number`, else its id.",
          example: "k3v9x2a",
        }),
      })
      .nullable()
      .openapi({ description: "The resource it created or changed; null for a write that names none." }),
    trace_id: z.string().nullable().openapi({
      description: "Its W3C trace id: the `traceparent` header of each of its webhook deliveries carries it.",
      example: "4bf92f3577b34da6a3ce929d0e0e4736",
    }),
    events: z.array(RequestEventSchema).openapi({
      description: `The events it wrote, in sequence order, at most ${TRAIL_MAX_EVENTS}.`,
    }),
  })
  .openapi("RequestTrail");

/** The scope that reads each kind of resource a write can name; a kind not listed is shown to no key. */
const RESOURCE_READ_SCOPE = new Map<string, Scope>([
  ["listing", "listings:read"],
  ["media_upload", "listings:read"],
  ["tour", "tours:read"],
  ["user", "users:read"],
  ["appointment", "scheduling:read"],
  ["webhook_endpoint", "webhooks:read"],
  ["webhook_replay", "webhooks:read"],
]);

/**
 * A request's trail as a key sees it: the events it may read (their types' read scopes), and
 * the resource and idempotency key only when it may read that resource. Without `scopes` (the
 * operator) everything.
 */
export const presentRequestTrail = ({ mark, resourceId, events: all }: RequestTrail, scopes?: ReadonlySet<Scope>) => {
  const readsResource =
    !scopes || (mark.resourceType !== null && scopes.has(RESOURCE_READ_SCOPE.get(mark.resourceType) ?? "admin"));
  const events = scopes
    ? all.filter(
        ({ event }) =>
          (EVENT_TYPE_NAMES as readonly string[]).includes(event.eventType) &&
          scopes.has(readScopeOf(event.eventType as EventType)),
      )
    : all;
  return presentTrail({ mark, resourceId: readsResource ? resourceId : null, events }, readsResource);
};

const presentTrail = ({ mark, resourceId, events }: RequestTrail, readsResource: boolean) =>
  RequestTrailSchema.parse({
    request_id: mark.requestId,
    agency_id: mark.agencyId,
    created_at: mark.createdAt,
    operation_id: mark.operationId,
    method: mark.method,
    path: mark.path,
    status: mark.status,
    idempotency_key: readsResource ? mark.idemKey : null,
    idempotency_outcome: "new",
    resource: mark.resourceType && resourceId ? { type: mark.resourceType, id: resourceId } : null,
    trace_id: mark.traceParent?.split("-")[1] ?? null,
    events: events.map(({ event, deliveries }) => ({
      event_id: event.id,
      event_type: event.eventType,
      created_at: event.createdAt,
      ...syncFields(event),
      deliveries: deliveries.map(presentDeliveryLogEntry),
    })),
  });
