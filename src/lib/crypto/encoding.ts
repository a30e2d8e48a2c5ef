/** Byte encodings used across the service: hex, base64 and base64url. */

/** Each byte's two hex digits, built once: an encoding appends one string per byte. */
const HEX_PAIRS = Array.from({ length: 256 }, (_, b) => b.toString(16).padStart(2, "0"));

export function hex(bytes: Uint8Array): string {
  let s = "";
  for (const b of bytes) s += HEX_PAIRS[b];
  return s;
}

/** Bytes turned into characters per call: well inside the engine's limit on a call's arguments. */
const BINARY_CHUNK = 8192;

/** Standard, padded base64. */
export function base64(bytes: Uint8Array): string {
  // A chunk at a time, not a string per byte: sealed answers and cursors are encoded on hot paths.
  let s = "";
  for (let i = 0; i < bytes.length; i += BINARY_CHUNK)
    s += Reflect.apply(String.fromCharCode, null, bytes.subarray(i, i + BINARY_CHUNK));
  return btoa(s);
}

export const base64url = (bytes: Uint8Array): string =>
  base64(bytes).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "");

export function fromBase64url(s: string): Uint8Array {
  const b = atob(s.replaceAll("-", "+").replaceAll("_", "/") + "=".repeat((4 - (s.length % 4)) % 4));
  const bytes = new Uint8Array(b.length);
  for (let i = 0; i < b.length; i++) bytes[i] = b.charCodeAt(i);
  return bytes;
}
