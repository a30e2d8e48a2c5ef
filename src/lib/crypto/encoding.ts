/** Byte encodings used across the service: hex, base64 and base64url. */

export function hex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += b.toString(16).padStart(2, "0");
  return s;
}

/** Standard, padded base64. */
export function base64(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += String.fromCharCode(b);
  return btoa(s);
}

export const base64url = (bytes: Uint8Array): string =>
  base64(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

export function fromBase64url(s: string): Uint8Array {
  const b = atob(s.replaceAll("-", "+").replaceAll("_", "/") + "=".repeat((4 - (s.length % 4)) % 4));
  return Uint8Array.from(b, (ch) => ch.charCodeAt(0));
}
