import { base64url } from "../lib/ids";

export const SIGNATURE_HEADER = "X-Webhook-Signature";

export const newSigningSecret = () => `whsec_${base64url(crypto.getRandomValues(new Uint8Array(32)))}`;

/**
 * `sha256=<hex>`: HMAC-SHA256 of the exact raw body, keyed with the whole signing secret
 * (UTF-8, `whsec_` included), the scheme of GitHub's X-Hub-Signature-256.
 */
export async function signPayload(secret: string, rawBody: string): Promise<string> {
  const key = await crypto.subtle.importKey(
    "raw",
    new TextEncoder().encode(secret),
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );
  const mac = new Uint8Array(await crypto.subtle.sign("HMAC", key, new TextEncoder().encode(rawBody)));
  return `sha256=${[...mac].map((b) => b.toString(16).padStart(2, "0")).join("")}`;
}
