import { base64, hex } from "../lib/crypto/encoding";
import { hmacKey, hmacSha256 } from "../lib/crypto/hmac";

const SIGNATURE_HEADER = "X-Webhook-Signature";

const SECRET_PREFIX = "whsec_";

/**
 * `whsec_` + standard base64 (padded) of 32 random bytes: the whole string keys
 * `X-Webhook-Signature`, and the decoded bytes key the Standard Webhooks `webhook-signature`,
 * as the standardwebhooks libraries read a `whsec_` secret.
 */
export const newSigningSecret = () => `${SECRET_PREFIX}${base64(crypto.getRandomValues(new Uint8Array(32)))}`;

/**
 * `sha256=<hex>`: HMAC-SHA256 of the exact raw body, keyed with the whole signing secret
 * (UTF-8, `whsec_` included), the scheme of GitHub's X-Hub-Signature-256.
 */
export async function signPayload(secret: string, rawBody: string): Promise<string> {
  return `sha256=${hex(await hmacSha256(secret, rawBody))}`;
}

const PADDED_BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The Standard Webhooks key of a secret: the bytes of the standard, padded base64 after
 * `whsec_`. Null for a secret not of that form (one minted before secrets took it), which
 * then signs only `X-Webhook-Signature`.
 */
function standardWebhooksKey(secret: string): Uint8Array | null {
  if (!secret.startsWith(SECRET_PREFIX)) return null;
  const encoded = secret.slice(SECRET_PREFIX.length);
  if (!encoded || !PADDED_BASE64.test(encoded)) return null;
  return Uint8Array.from(atob(encoded), (ch) => ch.charCodeAt(0));
}

/**
 * Standard Webhooks `webhook-signature`: `v1,<base64 HMAC-SHA256 of "<id>.<timestamp>.<raw body>">`,
 * keyed with the secret's decoded bytes; null when the secret has no such key.
 */
export async function standardSignature(
  secret: string,
  webhookId: string,
  timestamp: number,
  rawBody: string,
): Promise<string | null> {
  const key = standardWebhooksKey(secret);
  if (!key) return null;
  return `v1,${base64(await hmacSha256(key, `${webhookId}.${timestamp}.${rawBody}`))}`;
}

interface SignedAttempt {
  webhookId: string;
  timestamp: number;
  rawBody: string;
}

/** The signature headers of an attempt, from keys imported once per secret. */
export type Signer = (attempt: SignedAttempt) => Promise<Record<string, string>>;

/**
 * The signature headers of any number of attempts under one secret: `X-Webhook-Signature`
 * always, and the Standard Webhooks set (`webhook-id`, `webhook-timestamp` in integer
 * seconds, `webhook-signature`) whenever the secret is of the `whsec_<base64>` form; never
 * half of that set. The keys are imported once, so a batch signs each attempt in one step.
 */
export async function signer(secret: string): Promise<Signer> {
  const standardKey = standardWebhooksKey(secret);
  const [whole, standard] = await Promise.all([hmacKey(secret), standardKey ? hmacKey(standardKey) : null]);
  return async ({ webhookId, timestamp, rawBody }) => {
    const [mac, standardMac] = await Promise.all([
      hmacSha256(whole, rawBody),
      standard ? hmacSha256(standard, `${webhookId}.${timestamp}.${rawBody}`) : null,
    ]);
    const headers: Record<string, string> = {
      [SIGNATURE_HEADER]: `sha256=${hex(mac)}`,
    };
    if (standardMac) {
      headers["webhook-id"] = webhookId;
      headers["webhook-timestamp"] = String(timestamp);
      headers["webhook-signature"] = `v1,${base64(standardMac)}`;
    }
    return headers;
  };
}

/** The signature headers of one attempt (see signer). */
export async function signatureHeaders(secret: string, attempt: SignedAttempt): Promise<Record<string, string>> {
  return (await signer(secret))(attempt);
}
