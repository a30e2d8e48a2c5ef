import { describe, expect, it } from "vitest";
import { app } from "../../src/app";
import { EVENT_TYPE_NAMES } from "../../src/domain/events/catalog";

const env = { ENVIRONMENT: "local", API_MODE: "test", SECRET_KEY: "x", OPERATOR_TOKEN: "op" };

async function publicDoc() {
  const res = await app.request("https://api.test/api/v1/openapi.json", {}, env);
  expect(res.status).toBe(200);
  return (await res.json()) as Record<string, any>;
}

const BOTH_SIGNATURES = ["X-Webhook-Signature", "sha256=", "webhook-signature", "webhook-id", "webhook-timestamp"];

describe("delivery signatures in the OpenAPI document", () => {
  it("every event under webhooks names both signatures and lists the delivery headers", async () => {
    const doc = await publicDoc();
    for (const type of EVENT_TYPE_NAMES) {
      const op = doc.webhooks[type].post;
      for (const word of BOTH_SIGNATURES) expect(op.description, `${type}: ${word}`).toContain(word);
      expect(
        op.parameters.map((p: any) => [p.in, p.name]),
        type,
      ).toEqual(
        [
          "X-Webhook-Signature",
          "X-Webhook-Event",
          "X-Webhook-Id",
          "X-Webhook-Delivery",
          "webhook-id",
          "webhook-timestamp",
          "webhook-signature",
        ].map((name) => ["header", name]),
      );
    }
  });

  it("endpoint registration describes both signatures and the secret's form", async () => {
    const doc = await publicDoc();
    const op = doc.paths["/api/v1/webhooks/endpoints"].post;
    for (const word of [...BOTH_SIGNATURES, "base64"]) expect(op.description, word).toContain(word);
    const created = doc.components.schemas.CreatedWebhookEndpoint;
    const secret = [created, ...(created.allOf ?? [])].find((s: any) => s.properties?.signing_secret)?.properties
      .signing_secret;
    expect(secret.example).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    expect(secret.description).toContain("webhook-signature");
  });
});
