import { base64url, fromBase64url } from "./encoding";
import { hmacSha256 } from "./hmac";
import { derivedKey, type Keyring, keyById, keyIdOf } from "./keyring";

const enc = new TextEncoder();

const hmacParams: SubtleCryptoImportKeyAlgorithm = { name: "HMAC", hash: "SHA-256", length: 256 };
/** A whole HMAC-SHA256 in base64url. */
const MAC_LENGTH = 43;

const macOf = async (secret: string, purpose: string, message: string) =>
  base64url(await hmacSha256(await derivedKey(secret, purpose, hmacParams, ["sign", "verify"]), message));

/**
 * `<key id>.<mac>`: an HMAC-SHA256 of `message` under the ring's newest key, in base64url,
 * cut to `macLength` characters where the carrier is short (a cursor).
 */
export async function sign(ring: Keyring, purpose: string, message: string, macLength = MAC_LENGTH): Promise<string> {
  const [newest] = ring.secrets;
  return `${await keyIdOf(newest)}.${(await macOf(newest, purpose, message)).slice(0, macLength)}`;
}

/**
 * Whether `signature` is what `sign` made for `message` under a key of the ring. A signature
 * without a key id (made before the keyring) is checked against every key.
 */
export async function verify(
  ring: Keyring,
  purpose: string,
  message: string,
  signature: string,
  macLength = MAC_LENGTH,
): Promise<boolean> {
  const dot = signature.indexOf(".");
  if (dot < 0) {
    for (const secret of ring.secrets) {
      if (timingSafeEqual(signature, (await macOf(secret, purpose, message)).slice(0, macLength))) return true;
    }
    return false;
  }
  const secret = await keyById(ring, signature.slice(0, dot));
  if (secret === undefined) return false;
  return timingSafeEqual(signature.slice(dot + 1), (await macOf(secret, purpose, message)).slice(0, macLength));
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

/** Why a sealed value did not open; its message names the key, never the value. */
export class SealError extends Error {
  override name = "SealError";
}

const aes: SubtleCryptoImportKeyAlgorithm = { name: "AES-GCM", length: 256 };
const SEAL_VERSION = "v2";

/**
 * The AES key of a purpose, or of one `subkey` within it (say one agency's): a seal that is
 * made very often gets a key per subkey, so no one key sees every random nonce. Seals made
 * before the keyring (`v1`) have no subkey.
 */
const sealingKey = (secret: string, purpose: string, subkey?: string) =>
  derivedKey(secret, subkey === undefined ? purpose : `${purpose}\u0000${subkey}`, aes, ["encrypt", "decrypt"]);

/** The start of every value the ring's newest key seals: what a re-seal looks for. */
export const sealPrefix = async (ring: Keyring) => `${SEAL_VERSION}.${await keyIdOf(ring.secrets[0])}.`;

/**
 * AES-256-GCM with a random 96-bit nonce under the ring's newest key:
 * `v2.<key id>.<nonce>.<ciphertext>`, all base64url. `boundTo` names the row that holds the
 * ciphertext (say agency and endpoint id); it is authenticated as associated data, so the
 * ciphertext opens only for that same row and cannot be moved to another.
 */
export async function encrypt(
  ring: Keyring,
  purpose: string,
  plaintext: string,
  boundTo: string,
  subkey?: string,
): Promise<string> {
  const [newest] = ring.secrets;
  const key = await sealingKey(newest, purpose, subkey);
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = new Uint8Array(
    await crypto.subtle.encrypt(
      { name: "AES-GCM", iv, additionalData: enc.encode(boundTo) },
      key,
      enc.encode(plaintext),
    ),
  );
  return `${await sealPrefix(ring)}${base64url(iv)}.${base64url(ct)}`;
}

async function open(key: CryptoKey, iv: string, ct: string, boundTo: string): Promise<string | undefined> {
  try {
    return new TextDecoder().decode(
      await crypto.subtle.decrypt(
        { name: "AES-GCM", iv: fromBase64url(iv), additionalData: enc.encode(boundTo) },
        key,
        fromBase64url(ct),
      ),
    );
  } catch {
    return undefined;
  }
}

/**
 * Opens what `encrypt` sealed for the same purpose, subkey and row, under any key of the ring;
 * anything else throws a SealError. A `v1` seal (made before the keyring, without a key id) is
 * tried with every key.
 */
export async function decrypt(
  ring: Keyring,
  purpose: string,
  sealed: string,
  boundTo: string,
  subkey?: string,
): Promise<string> {
  const parts = sealed.split(".");
  if (parts[0] === "v1" && parts.length === 3) {
    for (const secret of ring.secrets) {
      const opened = await open(await sealingKey(secret, purpose), parts[1]!, parts[2]!, boundTo);
      if (opened !== undefined) return opened;
    }
    throw new SealError("a v1 seal opens under no key of the keyring for this purpose and row");
  }
  if (parts[0] !== SEAL_VERSION || parts.length !== 4) throw new SealError("unsupported ciphertext");
  const [, kid, iv, ct] = parts as [string, string, string, string];
  const secret = await keyById(ring, kid);
  if (secret === undefined) throw new SealError(`sealed under key ${kid}, which is not in the keyring`);
  const opened = await open(await sealingKey(secret, purpose, subkey), iv, ct, boundTo);
  if (opened === undefined) throw new SealError(`does not open under key ${kid} for this purpose and row`);
  return opened;
}

/** The associated data of a sealed column: the table and the columns that identify its row. */
export const rowBinding = (table: string, ...ids: string[]) => [table, ...ids].join("\u0000");
