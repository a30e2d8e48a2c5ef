import { type RouteHandler, z } from "@hono/zod-openapi";
import { readScopeOf } from "../../domain/events/access";
import { EVENT_TYPE_NAMES, EVENT_TYPES } from "../../domain/events/catalog";
import { SCOPES } from "../../domain/roles";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { payloadSchema, READ_SCOPES_TEXT } from "../../schemas/events";

const CatalogEntrySchema = z
  .object({
    event_type: z.enum(EVENT_TYPE_NAMES).openapi({ example: "listing.created" }),
    category: z.enum(["Appointment", "Billing", "Listing", "Media", "User"]).openapi({ example: "Listing" }),
    description: z.string().openapi({ example: "A listing was created via API or dashboard." }),
    api_version: z.string().openapi({ description: "Version of this event type's data shape.", example: "2026-11-01" }),
    read_scope: z.enum(SCOPES).openapi({
      description:
        "The scope that guards this event's data on its own routes: a key needs it to read the event in the " +
        "events API and to subscribe an endpoint to it.",
      example: "listings:read",
    }),
    payload_schema: z
      .record(z.string(), z.unknown())
      .openapi({ description: "JSON Schema (draft 2020-12) of the envelope's `data` for this event type." }),
  })
  .openapi("WebhookEventType");

const CatalogSchema = z
  .object({
    data: z.array(CatalogEntrySchema),
    next_cursor: z.string().openapi({ description: "Always empty: the catalog is one page.", example: "" }),
  })
  .openapi("WebhookEventCatalog");

export const catalogRoute = publicRoute(
  { endpoint: "get_webhook_catalog", scope: "webhooks:read" },
  {
    method: "get",
    path: "/api/v1/webhooks/events",
    operationId: "listWebhookEventTypes",
    tags: ["Webhooks"],
    summary: "The catalog of public event types",
    description:
      "The 17 event types you can subscribe to, each with its current `api_version` and a JSON Schema of its " +
      "`data`. The same schemas appear in this document's `webhooks` section. Each names its `read_scope`: " +
      `${READ_SCOPES_TEXT}. The catalog itself lists every type, whatever your key's scopes.`,
    responses: { 200: { description: "The catalog.", content: json(CatalogSchema) } },
  },
);

export const catalogHandler: RouteHandler<typeof catalogRoute, AppEnv> = (c) =>
  c.json(
    CatalogSchema.parse({
      data: EVENT_TYPE_NAMES.map((type) => ({
        event_type: type,
        category: EVENT_TYPES[type].category,
        description: EVENT_TYPES[type].description,
        api_version: EVENT_TYPES[type].apiVersion,
        read_scope: readScopeOf(type),
        payload_schema: payloadSchema(type),
      })),
      next_cursor: "",
    }),
    200,
  );
