import { z } from "@hono/zod-openapi";
import type { WebhookEndpoint } from "../db/schema";
import { EVENT_TYPE_NAMES } from "../domain/events/catalog";
import { MAX_FILTER_PATH, MAX_FILTER_VALUES, MAX_FILTERS } from "../domain/events/filters";
import { MAX_URL_LENGTH } from "./urls";
import { versionField } from "./version";

const FilterSchema = z
  .strictObject({
    path: z
      .string()
      .min(6)
      .max(MAX_FILTER_PATH)
      .openapi({
        description:
          "A field of the event's `data`, as `data.<field>` (nested fields joined by dots), that one of the " +
          "endpoint's event types carries in its catalog `payload_schema`; any other path is 422 " +
          "`webhook_filter_invalid`, naming it.",
        example: "data.status",
      }),
    in: z
      .array(z.union([z.string().max(200), z.number(), z.boolean(), z.null()]))
      .min(1)
      .max(MAX_FILTER_VALUES)
      .openapi({
        description: "The values the field may hold for the event to be delivered; a missing field counts as null.",
        example: ["Sold", "Pending"],
      }),
  })
  .openapi("WebhookFilter");

const FiltersInput = z
  .array(FilterSchema)
  .max(MAX_FILTERS)
  .openapi({
    description:
      `Up to ${MAX_FILTERS} conditions; an event is delivered only when it meets every one, and the delivery log ` +
      "shows the others as `filtered`. Filters apply to every delivery alike.",
    example: [{ path: "data.status", in: ["Sold", "Pending"] }],
  });

const PayloadField = z.enum(["full", "thin"]).openapi({
  description:
    "`full` (the default): the envelope with the event's `data`. `thin`: the same envelope without `data`, with " +
    "`resource` (type, id and version) to read when you act; signed the same way.",
  example: "full",
});

export const endpointIdParam = z.object({ endpoint_id: z.string().openapi({ example: "we_0mhx3k2a1q8v2l0c9z7rj4" }) });

export const WebhookEndpointSchema = z
  .object({
    id: z.string().openapi({ example: "we_0mhx3k2a1q8v2l0c9z7rj4" }),
    url: z.string().openapi({
      description: "The receiver: a public https URL.",
      example: "https://hooks.harbourmedia.example/alms",
    }),
    event_types: z
      .array(z.string())
      .nullable()
      .openapi({
        description: "Subscribed event types; null means every active type, including types added later.",
        example: ["listing.created", "listing.status_changed"],
      }),
    description: z.string().nullable().openapi({ example: "Production CRM sync" }),
    is_active: z.boolean().openapi({ example: true }),
    created_at: z.string().openapi({ example: "2026-11-22T12:00:00.000Z" }),
    filters: z
      .array(FilterSchema)
      .nullable()
      .openapi({
        description: "Conditions every event must meet to be delivered here; null: none.",
        example: [{ path: "data.status", in: ["Sold", "Pending"] }],
      }),
    payload: PayloadField,
    version: versionField,
  })
  .openapi("WebhookEndpoint");

export const CreatedWebhookEndpointSchema = WebhookEndpointSchema.extend({
  signing_secret: z.string().openapi({
    description:
      "`whsec_` + standard base64 of 32 random bytes. The whole string is the HMAC-SHA256 key of " +
      "`X-Webhook-Signature`; the decoded bytes after `whsec_` key the Standard Webhooks `webhook-signature` " +
      "(pass the string as is to a standardwebhooks library). Returned only in this response; it cannot be recovered.",
    example: "whsec_J3nB8mK1x0vQ7tP4yR2sW9dL6cF5hA0eG3iU8oZ1bN4=",
  }),
}).openapi("CreatedWebhookEndpoint");

export const CreateWebhookEndpointBody = z
  .strictObject({
    url: z
      .url()
      .max(MAX_URL_LENGTH)
      .openapi({
        description:
          "An https URL you control. Text that is not a URL is 422 `validation_string_pattern`; a URL the receiver " +
          "policy refuses (not https; loopback, private, link-local or metadata addresses; IP addresses in " +
          "non-canonical forms) is 422 `webhook_url_not_allowed`.",
        example: "https://hooks.harbourmedia.example/alms",
      }),
    event_types: z
      .array(z.string().max(100))
      .min(1)
      .max(EVENT_TYPE_NAMES.length)
      .optional()
      .openapi({
        description:
          "Event types to receive, each one your key may read (its catalog `read_scope`); omit to receive every " +
          "active type your key may read.",
        example: ["listing.created", "listing.status_changed"],
      }),
    description: z.string().max(300).optional().openapi({ example: "Production CRM sync" }),
    filters: FiltersInput.optional(),
    payload: PayloadField.optional(),
  })
  .openapi("CreateWebhookEndpoint");

export const UpdateWebhookEndpointBody = z
  .strictObject({
    url: CreateWebhookEndpointBody.shape.url.optional(),
    event_types: CreateWebhookEndpointBody.shape.event_types
      .unwrap()
      .nullable()
      .optional()
      .openapi({
        description:
          "Event types to receive, each one your key may read; null for every active type your key may read.",
        example: ["listing.status_changed"],
      }),
    description: z.string().max(300).nullable().optional().openapi({ example: "Production CRM sync" }),
    filters: FiltersInput.nullable().optional(),
    payload: PayloadField.optional(),
  })
  .openapi("UpdateWebhookEndpoint");

export const presentEndpoint = (e: WebhookEndpoint) => ({
  id: e.id,
  url: e.url,
  event_types: e.eventTypes ?? null,
  description: e.description,
  is_active: e.isActive,
  created_at: e.createdAt,
  filters: e.filters ?? null,
  payload: e.payload,
  version: e.version,
});
