import { base64url, fromBase64url } from "./encoding";
import { hmacSha256 } from "./hmac";

const enc = new TextEncoder();
const derived = new Map<string, Promise<CryptoKey>>();

/**
 * A purpose-bound key derived from the Worker's SECRET_KEY (HKDF-SHA256), so one secret
 * serves cursors, upload URLs and encryption without any two sharing a key.
 */
function deriveKey(
  secret: string,
  purpose: string,
  algorithm: SubtleCryptoImportKeyAlgorithm,
  usages: string[],
): Promise<CryptoKey> {
  const id = `${purpose}:${secret}`;
  let key = derived.get(id);
  if (!key) {
    key = (async () => {
      const base = await crypto.subtle.importKey("raw", enc.encode(secret), "HKDF", false, ["deriveKey"]);
      return crypto.subtle.deriveKey(
        { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: enc.encode(purpose) },
        base,
        algorithm,
        false,
        usages,
      );
    })();
    derived.set(id, key);
  }
  return key;
}

const hmacParams: SubtleCryptoImportKeyAlgorithm = { name: "HMAC", hash: "SHA-256", length: 256 };

export async function sign(secret: string, purpose: string, message: string): Promise<string> {
  const key = await deriveKey(secret, purpose, hmacParams, ["sign", "verify"]);
  return base64url(await hmacSha256(key, message));
}

/**
 * Compares a presented secret with the configured one through their SHA-256 digests, in
 * constant time: the time taken reveals neither where they differ nor the secret's length.
 */
export async function secretsEqual(presented: string, configured: string): Promise<boolean> {
  const [a, b] = await Promise.all([
    crypto.subtle.digest("SHA-256", enc.encode(presented)),
    crypto.subtle.digest("SHA-256", enc.encode(configured)),
  ]);
  const x = new Uint8Array(a);
  const y = new Uint8Array(b);
  // Both are 32 bytes: every byte is compared, whatever the tokens' lengths.
  let diff = 0;
  for (let i = 0; i < x.length; i++) diff |= x[i]! ^ y[i]!;
  return diff === 0;
}

export function timingSafeEqual(a: string, b: string): boolean {
  if (a.length !== b.length) return false;
  let diff = 0;
  for (let i = 0; i < a.length; i++) diff |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return diff === 0;
}

/**
 * AES-256-GCM with a random 96-bit nonce: `v1.<nonce>.<ciphertext>`, all base64url.
 * `boundTo` names the row that holds the ciphertext (say agency and endpoint id); it is
 * authenticated as associated data, so the ciphertext opens only for that same row and
 * cannot be moved to another.
 */
export async function encrypt(secret: string, purpose: string, plaintext: string, boundTo: string): Promise<string> {
  const key = await deriveKey(secret, purpose, { name: "AES-GCM", length: 256 }, ["encrypt", "decrypt"]);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: enc.encode(boundTo) },
      key,
      enc.encode(plaintext),
    ),
  );
  return `v1.${base64url(iv)}.${base64url(ct)}`;
}

/** Opens what `encrypt` sealed for the same purpose and row; anything else throws. */
export async function decrypt(secret: string, purpose: string, sealed: string, boundTo: string): Promise<string> {
  const [version, iv, ct] = sealed.split(".");
  if (version !== "v1" || !iv || !ct) throw new Error("unsupported ciphertext");
  const key = await deriveKey(secret, purpose, { name: "AES-GCM", length: 256 }, ["encrypt", "decrypt"]);
  return new TextDecoder().decode(
    await crypto.subtle.decrypt(
      { name: "AES-GCM", iv: fromBase64url(iv), additionalData: enc.encode(boundTo) },
      key,
      fromBase64url(ct),
    ),
  );
}

/** The associated data of a sealed column: the table and the columns that identify its row. */
export const rowBinding = (table: string, ...ids: string[]) => [table, ...ids].join("\u0000");
