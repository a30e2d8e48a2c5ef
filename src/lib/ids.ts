import { base64url, hex } from "./crypto/encoding";

const ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz";

/** Random lowercase alphanumerics, unbiased (rejection sampling). */
export function randomAlnum(length: number): string {
  let out = "";
  while (out.length < length) {
    const bytes = crypto.getRandomValues(new Uint8Array(length * 2));
    for (const b of bytes) {
      if (b < 252 && out.length < length) out += ALPHABET[b % 36];
    }
  }
  return out;
}

/** A prefixed id whose leading part sorts by creation time: `usr_<time><random>`. */
export function newId(prefix: string): string {
  return `${prefix}_${Date.now().toString(36).padStart(9, "0")}${randomAlnum(12)}`;
}

export function randomToken(bytes = 32): string {
  return base64url(crypto.getRandomValues(new Uint8Array(bytes)));
}

export async function sha256Hex(input: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(input));
  return hex(new Uint8Array(digest));
}

export const nowIso = (ms = Date.now()) => new Date(ms).toISOString();

/**
 * A stable bucket in [0, buckets) for a string: FNV-1a (32-bit) over its UTF-16 code
 * units. The same on every isolate and release, so a key always finds the same bucket.
 */
export function bucketOf(value: string, buckets: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < value.length; i++) {
    hash ^= value.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193);
  }
  return (hash >>> 0) % buckets;
}
