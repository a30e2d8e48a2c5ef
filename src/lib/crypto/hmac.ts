const enc = new TextEncoder();

/** An HMAC-SHA256 signing key from raw bytes (a string is taken as its UTF-8 bytes). */
export const hmacKey = (key: Uint8Array | string): Promise<CryptoKey> =>
  crypto.subtle.importKey(
    "raw",
    typeof key === "string" ? enc.encode(key) : key,
    { name: "HMAC", hash: "SHA-256" },
    false,
    ["sign"],
  );

/** HMAC-SHA256 of `message` (UTF-8) under `key`: a key imported once, or raw key bytes. */
export async function hmacSha256(key: CryptoKey | Uint8Array | string, message: string): Promise<Uint8Array> {
  const cryptoKey = key instanceof CryptoKey ? key : await hmacKey(key);
  return new Uint8Array(await crypto.subtle.sign("HMAC", cryptoKey, enc.encode(message)));
}
