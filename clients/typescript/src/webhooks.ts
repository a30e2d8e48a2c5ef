// Verifying a webhook delivery with WebCrypto (Node 20.3+, browsers, Workers, Deno, Bun). Every
// delivery carries two signatures of the same raw body:
// - X-Webhook-Signature: `sha256=<hex HMAC-SHA256 of the raw body>`, keyed with the whole
//   signing secret (UTF-8, `whsec_` included), GitHub's scheme;
// - Standard Webhooks: `webhook-signature: v1,<base64 HMAC-SHA256 of "<webhook-id>.<webhook-timestamp>.<raw body>">`,
//   keyed with the base64-decoded bytes after `whsec_`.
import type { components } from "./openapi.js";

/** The request headers: a Headers object, or a plain record as Node's http module gives. */
export type HeadersLike = Headers | Record<string, string | string[] | undefined>;

type Delivered<E> = E extends unknown
  ? Omit<E, "created_at"> & { timestamp: number; nonce: string; replay_id?: string }
  : never;

/**
 * A delivery's body: an event as the events API lists it, with this attempt's `timestamp` and `nonce` for `created_at`,
 * and `replay_id` when a replay sent it.
 */
export type WebhookEnvelope = Delivered<components["schemas"]["Event"]>;

export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

export interface VerifyOptions {
  /** Largest distance between a delivery's timestamps and this clock (default 300 s). */
  toleranceSeconds?: number;
  /** The clock, in ms (tests pass a fixed one). */
  now?: () => number;
}

const encoder = new TextEncoder();
const MAX_SIGNATURES = 10;

function header(headers: HeadersLike, name: string): string | null {
  if (headers instanceof Headers) return headers.get(name);
  const wanted = name.toLowerCase();
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() !== wanted || value === undefined) continue;
    return Array.isArray(value) ? value.join(", ") : value;
  }
  return null;
}

const bytesOf = (body: string | Uint8Array) => (typeof body === "string" ? encoder.encode(body) : body);

function concat(...parts: Uint8Array[]) {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

function fromBase64(text: string): Uint8Array | null {
  if (!/^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(text)) return null;
  const raw = atob(text);
  const out = new Uint8Array(raw.length);
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

function fromHex(text: string): Uint8Array | null {
  if (!/^(?:[0-9a-fA-F]{2})+$/.test(text)) return null;
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = Number.parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return out;
}

async function hmacVerify(key: Uint8Array, signature: Uint8Array, message: Uint8Array) {
  const imported = await crypto.subtle.importKey("raw", new Uint8Array(key), { name: "HMAC", hash: "SHA-256" }, false, [
    "verify",
  ]);
  // WebCrypto's verify compares in constant time.
  return crypto.subtle.verify("HMAC", imported, new Uint8Array(signature), new Uint8Array(message));
}

/** Whether X-Webhook-Signature (`sha256=<hex>`) signs `rawBody` under `secret`. */
export async function verifyHubSignature(secret: string, rawBody: string | Uint8Array, signature: string | null) {
  const mac = signature?.startsWith("sha256=") ? fromHex(signature.slice("sha256=".length)) : null;
  if (mac === null || mac.length !== 32) return false;
  return hmacVerify(encoder.encode(secret), mac, bytesOf(rawBody));
}

/**
 * Whether the Standard Webhooks headers sign `rawBody` under `secret`: one of the space-separated
 * `v1,<base64>` signatures matches, and `webhook-timestamp` is within the tolerance.
 */
export async function verifyStandardSignature(
  secret: string,
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  options: VerifyOptions = {},
) {
  const id = header(headers, "webhook-id");
  const timestamp = header(headers, "webhook-timestamp");
  const signatures = header(headers, "webhook-signature");
  const key = fromBase64(secret.startsWith("whsec_") ? secret.slice("whsec_".length) : secret);
  if (!id || !timestamp || !/^\d{1,12}$/.test(timestamp) || !signatures || !key) return false;
  if (!withinTolerance(Number(timestamp), options)) return false;
  const signed = concat(encoder.encode(`${id}.${timestamp}.`), bytesOf(rawBody));
  for (const entry of signatures.split(" ").slice(0, MAX_SIGNATURES)) {
    const [version, encoded] = entry.split(",", 2);
    const mac = version === "v1" && encoded ? fromBase64(encoded) : null;
    if (mac && mac.length === 32 && (await hmacVerify(key, mac, signed))) return true;
  }
  return false;
}

function withinTolerance(seconds: number, options: VerifyOptions) {
  const now = (options.now ?? Date.now)() / 1000;
  return Math.abs(now - seconds) <= (options.toleranceSeconds ?? 300);
}

/**
 * Verifies a delivery and returns its envelope. Every signature the delivery carries must verify
 * (X-Webhook-Signature always; the Standard Webhooks set when the secret is of the `whsec_<base64>`
 * form), and the envelope's `timestamp` must be within the tolerance. Throws
 * WebhookVerificationError otherwise. Then refuse a `nonce` seen in the last 10 minutes and
 * deduplicate on `event_id` (retries and replays reuse it).
 */
export async function verifyWebhook(
  secret: string,
  rawBody: string | Uint8Array,
  headers: HeadersLike,
  options: VerifyOptions = {},
): Promise<WebhookEnvelope> {
  const hub = header(headers, "X-Webhook-Signature");
  const standard = header(headers, "webhook-signature");
  if (hub === null && standard === null) throw new WebhookVerificationError("The delivery carries no signature");
  if (hub !== null && !(await verifyHubSignature(secret, rawBody, hub)))
    throw new WebhookVerificationError("X-Webhook-Signature does not match");
  if (standard !== null && !(await verifyStandardSignature(secret, rawBody, headers, options)))
    throw new WebhookVerificationError("webhook-signature does not match, or webhook-timestamp is too far off");
  let envelope: WebhookEnvelope;
  try {
    envelope = JSON.parse(typeof rawBody === "string" ? rawBody : new TextDecoder().decode(rawBody));
  } catch {
    throw new WebhookVerificationError("The body is not JSON");
  }
  if (typeof envelope?.timestamp !== "number" || !withinTolerance(envelope.timestamp, options))
    throw new WebhookVerificationError("The delivery's timestamp is more than the tolerance from this clock");
  return envelope;
}
