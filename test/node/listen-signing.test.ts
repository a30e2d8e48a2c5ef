import { describe, expect, it } from "vitest";
import { newSecret, signatureHeaders } from "../../scripts/ops-listen.ts";
import { signatureHeaders as workerSignatureHeaders } from "../../src/webhooks/signing";

/** `ops listen` signs in Node what the Worker signs with Web Crypto: the two must never drift apart. */
describe("ops listen signs as a real delivery is signed", () => {
  const body = JSON.stringify({ event_id: "evt_1", event_type: "listing.created", data: { ünïcode: "✓" } });
  const secrets = {
    "a secret listen mints": newSecret(),
    "a secret of the whsec_<padded base64> form": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    "a secret of another form (X-Webhook-Signature only)": "whsec_not base64!",
    "a secret without the prefix": "plain-secret",
  };

  for (const [name, secret] of Object.entries(secrets)) {
    it(`the same headers as the Worker for ${name}`, async () => {
      const ours = signatureHeaders(secret, "evt_1", 1_767_225_600, body);
      const worker = await workerSignatureHeaders(secret, {
        webhookId: "evt_1",
        timestamp: 1_767_225_600,
        rawBody: body,
      });
      expect(ours).toEqual(worker);
    });
  }

  it("a minted secret carries the Standard Webhooks set", () => {
    expect(Object.keys(signatureHeaders(newSecret(), "evt_1", 1, body)).sort()).toEqual([
      "X-Webhook-Signature",
      "webhook-id",
      "webhook-signature",
      "webhook-timestamp",
    ]);
  });
});
