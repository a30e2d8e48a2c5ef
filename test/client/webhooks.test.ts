import { describe, expect, it } from "vitest";
import {
  verifyHubSignature,
  verifyStandardSignature,
  verifyWebhook,
  WebhookVerificationError,
} from "../../clients/typescript/src/index.js";
import { newSigningSecret, signatureHeaders } from "../../src/webhooks/signing";

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const at = (ms: number) => ({ now: () => ms });
const seconds = Math.floor(NOW / 1000);

/** A delivery signed by the service's own signing code. */
async function delivery(secret = newSigningSecret(), timestamp = seconds) {
  const rawBody = JSON.stringify({
    event_id: "evt_client1",
    event_type: "listing.created",
    api_version: "2026-11-01",
    timestamp,
    nonce: "nonce_1",
    data: { listing_number: "abc1234", status: "Coming Soon" },
  });
  const headers = await signatureHeaders(secret, { webhookId: "evt_client1", timestamp, rawBody });
  return { secret, rawBody, headers };
}

describe("the official client's webhook verification", () => {
  it("verifies both signatures the service makes, and returns the envelope", async () => {
    const { secret, rawBody, headers } = await delivery();
    expect(Object.keys(headers).sort()).toEqual([
      "X-Webhook-Signature",
      "webhook-id",
      "webhook-signature",
      "webhook-timestamp",
    ]);
    expect(await verifyHubSignature(secret, rawBody, headers["X-Webhook-Signature"]!)).toBe(true);
    expect(await verifyStandardSignature(secret, rawBody, headers, at(NOW))).toBe(true);
    const envelope = await verifyWebhook(secret, rawBody, new Headers(headers), at(NOW));
    expect(envelope).toMatchObject({ event_id: "evt_client1", event_type: "listing.created", nonce: "nonce_1" });
    // Bytes verify as the string does.
    expect(await verifyWebhook(secret, new TextEncoder().encode(rawBody), headers, at(NOW))).toEqual(envelope);
  });

  it("refuses another body, another secret, and a signature of another scheme", async () => {
    const { secret, rawBody, headers } = await delivery();
    const other = newSigningSecret();
    expect(await verifyHubSignature(secret, `${rawBody} `, headers["X-Webhook-Signature"]!)).toBe(false);
    expect(await verifyHubSignature(other, rawBody, headers["X-Webhook-Signature"]!)).toBe(false);
    expect(await verifyHubSignature(secret, rawBody, "sha256=zz")).toBe(false);
    expect(await verifyHubSignature(secret, rawBody, null)).toBe(false);
    expect(await verifyStandardSignature(secret, `${rawBody} `, headers, at(NOW))).toBe(false);
    expect(await verifyStandardSignature(other, rawBody, headers, at(NOW))).toBe(false);
    expect(
      await verifyStandardSignature(secret, rawBody, { ...headers, "webhook-id": "evt_other" }, at(NOW)),
      "the id is signed",
    ).toBe(false);
    await expect(verifyWebhook(other, rawBody, headers, at(NOW))).rejects.toThrow(WebhookVerificationError);
  });

  it("refuses a delivery with one good and one bad signature, and one with none", async () => {
    const { secret, rawBody, headers } = await delivery();
    const badHub = { ...headers, "X-Webhook-Signature": `sha256=${"0".repeat(64)}` };
    await expect(verifyWebhook(secret, rawBody, badHub, at(NOW))).rejects.toThrow(/X-Webhook-Signature/);
    const badStandard = { ...headers, "webhook-signature": `v1,${btoa("x".repeat(32))}` };
    await expect(verifyWebhook(secret, rawBody, badStandard, at(NOW))).rejects.toThrow(/webhook-signature/);
    await expect(verifyWebhook(secret, rawBody, {}, at(NOW))).rejects.toThrow(/no signature/);
  });

  it("accepts any of several webhook-signature entries, and Node's lower-case header records", async () => {
    const { secret, rawBody, headers } = await delivery();
    const node = {
      "x-webhook-signature": headers["X-Webhook-Signature"],
      "webhook-id": headers["webhook-id"],
      "webhook-timestamp": headers["webhook-timestamp"],
      "webhook-signature": `v1,${btoa("y".repeat(32))} ${headers["webhook-signature"]}`,
    };
    expect((await verifyWebhook(secret, rawBody, node, at(NOW))).event_id).toBe("evt_client1");
  });

  it("refuses a delivery more than 5 minutes from the clock, either way", async () => {
    const { secret, rawBody, headers } = await delivery();
    expect((await verifyWebhook(secret, rawBody, headers, at(NOW + 299_000))).event_id).toBe("evt_client1");
    await expect(verifyWebhook(secret, rawBody, headers, at(NOW + 301_000))).rejects.toThrow(WebhookVerificationError);
    await expect(verifyWebhook(secret, rawBody, headers, at(NOW - 301_000))).rejects.toThrow(WebhookVerificationError);
    const hubOnly = { "X-Webhook-Signature": headers["X-Webhook-Signature"] };
    await expect(verifyWebhook(secret, rawBody, hubOnly, at(NOW + 301_000))).rejects.toThrow(/timestamp/);
  });

  it("verifies X-Webhook-Signature alone for a secret without a Standard Webhooks key", async () => {
    const { secret, rawBody, headers } = await delivery("legacy-secret-not-base64");
    expect(Object.keys(headers)).toEqual(["X-Webhook-Signature"]);
    expect((await verifyWebhook(secret, rawBody, headers, at(NOW))).event_id).toBe("evt_client1");
  });
});
