import { describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { EVENT_TYPE_NAMES } from "../../src/domain/events/catalog";

const env = { ENVIRONMENT: "local", API_MODE: "test", SECRET_KEY: "x", OPERATOR_TOKEN: "op" };

async function publicDoc() {
  const res = await app.request("https://api.test/api/v1/openapi.json", {}, env);
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, any>;
}

/**
 * Types, property names and required fields of a JSON Schema, all the way down. The two
 * generators spell a nullable differently (`type: [t, "null"]` or `anyOf`); both count alike.
 */
function shape(schema: any): unknown {
  if (schema?.anyOf) return schema.anyOf.flatMap((s: any) => [shape(s)].flat()).sort();
  if (Array.isArray(schema?.type)) return [...schema.type].sort();
  if (schema?.type === "array") return { items: shape(schema.items) };
  if (schema?.type !== "object" && !schema?.properties) return schema?.type ?? "any";
  return {
    required: [...(schema.required ?? [])].sort(),
    properties: Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, shape(v)])),
  };
}

describe("the events API in the OpenAPI document", () => {
  it("documents each event with the same data schema as the webhooks section", async () => {
    const doc = await publicDoc();
    const list = doc.paths["/api/v1/events"].get;
    const one = doc.paths["/api/v1/events/{event_id}"].get;
    expect(one.responses["200"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/Event" });
    expect(list.responses["200"].content["application/json"].schema).toEqual({
      $ref: "#/components/schemas/EventPage",
    });
    expect(Object.keys(one.responses)).toContain("404");
    expect([list["x-required-scope"], one["x-required-scope"]]).toEqual(["webhooks:read", "webhooks:read"]);
    expect([list["x-rate-limit"], one["x-rate-limit"]]).toEqual([
      { endpoint: "read_events_list", requests_per_60s: 300 },
      { endpoint: "read_event_single", requests_per_60s: 600 },
    ]);
    const variants = doc.components.schemas.Event.oneOf.map((r: any) => r.$ref.split("/").pop());
    expect(variants).toHaveLength(EVENT_TYPE_NAMES.length);
    for (const [i, type] of EVENT_TYPE_NAMES.entries()) {
      const item = doc.components.schemas[variants[i]];
      const delivery = doc.webhooks[type].post.requestBody.content["application/json"].schema;
      expect(item.properties.event_type.enum, type).toEqual([type]);
      expect(shape(item.properties.data), type).toEqual(shape(delivery.properties.data));
      const perAttempt = ["timestamp", "nonce"];
      expect(Object.keys(item.properties).sort(), type).toEqual(
        [...Object.keys(delivery.properties).filter((k) => !perAttempt.includes(k)), "created_at"].sort(),
      );
    }
  });

  it("documents the delivery log under the endpoint, read-only with its own budget", async () => {
    const doc = await publicDoc();
    const op = doc.paths["/api/v1/webhooks/endpoints/{endpoint_id}/deliveries"].get;
    expect(op["x-required-scope"]).toBe("webhooks:read");
    expect(op["x-rate-limit"]).toEqual({ endpoint: "read_webhook_deliveries", requests_per_60s: 120 });
    expect(Object.keys(doc.paths["/api/v1/webhooks/endpoints/{endpoint_id}/deliveries"])).toEqual(["get"]);
    expect(Object.keys(doc.components.schemas.WebhookDelivery.properties)).toEqual(
      expect.arrayContaining(["event_type", "status", "last_response_status", "last_error", "next_attempt_at"]),
    );
  });
});
