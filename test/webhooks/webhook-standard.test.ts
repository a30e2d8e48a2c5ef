import { env } from "cloudflare:workers";
import { createHmac } from "node:crypto";
import { verify as verifyGithubStyle } from "@octokit/webhooks-methods";
import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { webhookDeliveries, webhookEndpoints } from "../../src/db/schema";
import { seal, webhookSigningSecret } from "../../src/domain/sealed-columns";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { newSigningSecret, signatureHeaders } from "../../src/webhooks/signing";
import { call, db, internal, makeListing, makeTenant } from "../support/harness";
import {
  consume,
  drained,
  interceptWebhooks,
  type Receivers,
  registerEndpoint,
  WEBHOOK_DLQ,
  WEBHOOK_QUEUE,
} from "../support/webhook-harness";

let receivers: Receivers;
beforeEach(() => {
  receivers = interceptWebhooks();
});
afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

const headersOf = (req: { headers: Headers }) => Object.fromEntries(req.headers);

/** One listing.created delivered once to a fresh endpoint; the request the receiver got. */
async function oneDelivery() {
  const t = await makeTenant();
  const hook = await registerEndpoint(t, "http://localhost:9999/standard", ["listing.created"]);
  const listing = await makeListing(t);
  await drained();
  const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
  const result = await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id }]);
  expect(result.explicitAcks).toEqual(["m0"]);
  expect(receivers.received).toHaveLength(1);
  return { hook, listing, req: receivers.received[0]! };
}

describe("Standard Webhooks headers", () => {
  it("a delivery verifies with the standardwebhooks library; a changed body or another secret throws", async () => {
    const { hook, listing, req } = await oneDelivery();
    const headers = headersOf(req);
    const envelope = JSON.parse(req.body);
    expect(headers["webhook-id"]).toBe(envelope.event_id);
    expect(headers["webhook-timestamp"]).toBe(String(envelope.timestamp));
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(hook.signing_secret).verify(req.body, headers)).toEqual(envelope);
    const tampered = req.body.replace(listing.listing_number, "zzzzzzz");
    expect(tampered).not.toBe(req.body);
    expect(() => new Webhook(hook.signing_secret).verify(tampered, headers)).toThrow(/No matching signature/);
    expect(() => new Webhook(newSigningSecret()).verify(req.body, headers)).toThrow(/No matching signature/);
  });

  it("the same delivery verifies with sha256=: HMAC-SHA256 of the raw body keyed with the whole secret", async () => {
    const { hook, req } = await oneDelivery();
    expect(hook.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
    const expected = `sha256=${createHmac("sha256", hook.signing_secret).update(req.body).digest("hex")}`;
    expect(req.headers.get("X-Webhook-Signature")).toBe(expected);
    expect(await verifyGithubStyle(hook.signing_secret, req.body, expected)).toBe(true);
    expect(await verifyGithubStyle(hook.signing_secret, `${req.body} `, expected)).toBe(false);
    expect(await verifyGithubStyle(newSigningSecret(), req.body, expected)).toBe(false);
  });

  it("a delivery carries exactly the headers signatureHeaders computes for its id, timestamp and body", async () => {
    const { hook, req } = await oneDelivery();
    const envelope = JSON.parse(req.body);
    const expected = await signatureHeaders(hook.signing_secret, {
      webhookId: envelope.event_id,
      timestamp: envelope.timestamp,
      rawBody: req.body,
    });
    expect(Object.keys(expected).sort()).toEqual([
      "X-Webhook-Signature",
      "webhook-id",
      "webhook-signature",
      "webhook-timestamp",
    ]);
    for (const [name, value] of Object.entries(expected)) expect(req.headers.get(name), name).toBe(value);
  });

  it("signing secrets are whsec_ + standard base64 of 32 random bytes", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 12; i++) {
      const hook = await registerEndpoint(t, `http://localhost:9999/format-${i}`);
      expect(hook.signing_secret).toMatch(/^whsec_[A-Za-z0-9+/]{43}=$/);
      expect(atob(hook.signing_secret.slice("whsec_".length))).toHaveLength(32);
    }
  });

  it("retries and a replay carry the headers again: the same webhook-id, a fresh webhook-timestamp", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/retried", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
    const start = Date.now();
    receivers.answer = () => new Response("down", { status: 503 });
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id, attempts: 1 }]);
    vi.setSystemTime(start + 90_000);
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id, attempts: 2 }]);
    await consume(WEBHOOK_DLQ, [{ delivery_id: delivery!.id }]);
    vi.setSystemTime(start + 180_000);
    const replayed = await internal(`/internal/v1/webhook-deliveries/${delivery!.id}/replay`, { method: "POST" });
    expect(replayed.status, replayed.text).toBe(202);
    receivers.answer = () => new Response("ok");
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id, attempts: 1 }]);
    expect(
      (await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.id, delivery!.id)))[0],
    ).toMatchObject({ status: "delivered", attempts: 3 });

    const sent = receivers.received.map((req) => ({ headers: headersOf(req), envelope: JSON.parse(req.body), req }));
    expect(sent).toHaveLength(3);
    expect(new Set(sent.map((s) => s.headers["webhook-id"]))).toEqual(new Set([delivery!.eventId]));
    const stamps = sent.map((s) => Number(s.headers["webhook-timestamp"]));
    expect(stamps).toEqual(sent.map((s) => s.envelope.timestamp));
    expect(stamps[1]! - stamps[0]!).toBeGreaterThanOrEqual(89);
    expect(stamps[2]! - stamps[1]!).toBeGreaterThanOrEqual(89);
    for (const s of sent) expect(new Webhook(hook.signing_secret).verify(s.req.body, s.headers)).toEqual(s.envelope);
  });

  it("the test event carries the headers and verifies with the library", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/ping");
    const ok = await call(`/api/v1/webhooks/endpoints/${hook.id}/test`, { method: "POST", key: t.key });
    expect(ok.json, ok.text).toMatchObject({ delivered: true });
    const [req] = receivers.received;
    expect(req!.headers.get("webhook-id")).toBe(ok.json.event_id);
    expect(new Webhook(hook.signing_secret).verify(req!.body, headersOf(req!))).toMatchObject({
      event_type: "webhook.test",
      event_id: ok.json.event_id,
    });
  });

  it("an endpoint whose stored secret is not whsec_<base64> gets X-Webhook-Signature alone", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/legacy");
    const legacy = "whsec_J3nB8mK1x0vQ7tP4yR2sW9dL6cF5hA0eG3iU8oZ1b-_";
    const [row] = await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.id, hook.id));
    await db()
      .update(webhookEndpoints)
      .set({
        secretSealed: await seal(
          keyringOf(env),
          webhookSigningSecret,
          { agencyId: row!.agencyId, boundId: row!.id },
          legacy,
        ),
      })
      .where(eq(webhookEndpoints.id, hook.id));
    const ok = await call(`/api/v1/webhooks/endpoints/${hook.id}/test`, { method: "POST", key: t.key });
    expect(ok.json, ok.text).toMatchObject({ delivered: true, error: null });
    const [req] = receivers.received;
    expect(await verifyGithubStyle(legacy, req!.body, req!.headers.get("X-Webhook-Signature")!)).toBe(true);
    expect(Object.keys(headersOf(req!)).filter((name) => name.startsWith("webhook-"))).toEqual([]);
  });
});
