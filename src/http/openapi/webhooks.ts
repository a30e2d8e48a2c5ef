import { EVENT_TYPE_NAMES, EVENT_TYPES } from "../../domain/events/catalog";
import { envelopeSchema } from "../../schemas/events";

/** How each delivery is signed, said under every event of the `webhooks` section. */
const DELIVERY_SIGNATURES =
  "Each delivery carries two signatures; verify either. `X-Webhook-Signature: sha256=<hex>`: HMAC-SHA256 of the " +
  "raw body keyed with your endpoint's whole signing secret (`whsec_` included), GitHub's scheme. And the " +
  "Standard Webhooks headers: `webhook-id` (the event id, the same on every retry and replay: deduplicate on it), " +
  "`webhook-timestamp` (this attempt's Unix seconds) and `webhook-signature: v1,<base64>`: HMAC-SHA256 of " +
  "`<webhook-id>.<webhook-timestamp>.<raw body>` keyed with the base64-decoded bytes after `whsec_`, so a " +
  "standardwebhooks library's `new Webhook(secret).verify(body, headers)` accepts it. Also sent: " +
  "`X-Webhook-Event`, `X-Webhook-Id` (the event id) and `X-Webhook-Delivery` (the delivery id). A delivery that a " +
  "replay sent (`POST /api/v1/webhooks/endpoints/{endpoint_id}/replays`) also carries `X-Webhook-Replay` and " +
  "`replay_id` in the body, both the replay's id; an endpoint with `payload: thin` gets the body without `data`.";

const header = (name: string, description: string, example: string) => ({
  name,
  in: "header",
  required: true,
  description,
  schema: { type: "string" },
  example,
});

/** The headers of every delivery attempt. */
const DELIVERY_HEADERS = [
  header(
    "X-Webhook-Signature",
    "`sha256=<hex>`: HMAC-SHA256 of the raw body keyed with the whole signing secret (`whsec_` included).",
    "sha256=5d41402abc4b2a76b9719d911017c592ae1f2c3b5e4d6f7a8b9c0d1e2f3a4b5c",
  ),
  header("X-Webhook-Event", "The event type.", "listing.created"),
  header("X-Webhook-Id", "The event id; the same on every attempt.", "evt_0mhx3k2a1q8v2l0c9z7rj4"),
  header(
    "X-Webhook-Delivery",
    "The delivery id (one per event and endpoint, and one per event in each replay).",
    "whd_0mhx3k2a1q8v2l0c9z7rj4",
  ),

  header("webhook-id", "Standard Webhooks: the event id; the same on every attempt.", "evt_0mhx3k2a1q8v2l0c9z7rj4"),
  header("webhook-timestamp", "Standard Webhooks: this attempt's Unix time in seconds.", "1795870800"),
  header(
    "webhook-signature",
    "Standard Webhooks: `v1,<base64 HMAC-SHA256 of <webhook-id>.<webhook-timestamp>.<raw body>>`, keyed with " +
      "the base64-decoded bytes after `whsec_`.",
    "v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=",
  ),
];

/** Every public event type under the OpenAPI 3.1 `webhooks` section, from the same schemas as the catalog. */
export function withWebhooks<D extends object>(doc: D): D {
  const webhooks: Record<string, unknown> = {};
  for (const type of EVENT_TYPE_NAMES) {
    const spec = EVENT_TYPES[type];
    webhooks[type] = {
      post: {
        operationId: `webhook_${type.replaceAll(".", "_")}`,
        tags: [`${spec.category} events`],
        summary: type,
        description: `${spec.description} ${DELIVERY_SIGNATURES}`,
        parameters: DELIVERY_HEADERS,
        requestBody: { required: true, content: { "application/json": { schema: envelopeSchema(type) } } },
        responses: {
          "200": { description: "Any 2xx within 10 seconds acknowledges the delivery; anything else is retried." },
        },
      },
    };
  }
  return { ...doc, webhooks };
}
