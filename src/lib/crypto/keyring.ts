import { base64url } from "./encoding";

const enc = new TextEncoder();

/**
 * The master keys of every seal and signature, newest first: the first seals and signs, every
 * one opens and verifies. `SECRET_KEY` is the newest; `SECRET_KEY_PREVIOUS` holds the older keys
 * that still open what they sealed while a rotation runs (see docs/operators.md).
 */
export interface Keyring {
  readonly secrets: readonly [newest: string, ...older: string[]];
}

/** The secrets a keyring is made of: the Worker's `SECRET_KEY` and optional `SECRET_KEY_PREVIOUS`. */
export interface KeyringSecrets {
  SECRET_KEY: string;
  SECRET_KEY_PREVIOUS?: string;
}

/** The Worker's keyring: `SECRET_KEY`, then each key of `SECRET_KEY_PREVIOUS` (separated by commas or spaces). */
export function keyringOf(env: KeyringSecrets): Keyring {
  const older = (env.SECRET_KEY_PREVIOUS ?? "").split(/[\s,]+/).filter((s) => s !== "" && s !== env.SECRET_KEY);
  return { secrets: [env.SECRET_KEY, ...new Set(older)] };
}

/** Characters of a key id: 48 bits, so two keys of one ring never share one by chance. */
export const KEY_ID_LENGTH = 8;

/** Per-isolate caches, bounded so that per-agency keys cannot grow them without end. */
const CACHE_LIMIT = 1024;
const bases = new Map<string, Promise<CryptoKey>>();
const ids = new Map<string, Promise<string>>();
const derived = new Map<string, Promise<CryptoKey>>();

function cached<T>(cache: Map<string, T>, id: string, make: () => T): T {
  let value = cache.get(id);
  if (value === undefined) {
    // Maps iterate in insertion order: the oldest entry leaves first.
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    value = make();
    cache.set(id, value);
  }
  return value;
}

const baseKey = (secret: string) =>
  cached(bases, secret, () =>
    crypto.subtle.importKey("raw", enc.encode(secret), "HKDF", false, ["deriveKey", "deriveBits"]),
  );

const hkdf = (info: string) => ({ name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info: enc.encode(info) });

/**
 * A key's id, derived from the key itself (HKDF-SHA256 with its own label, which no purpose
 * uses), so no configuration can pair a key with the wrong id, and the id reveals nothing of
 * the keys derived for sealing and signing.
 */
export const keyIdOf = (secret: string): Promise<string> =>
  cached(ids, secret, async () => {
    const bits = await crypto.subtle.deriveBits(hkdf("keyring:key-id"), await baseKey(secret), 48);
    return base64url(new Uint8Array(bits));
  });

/** The ring's key whose id is `kid`, if any. */
export async function keyById(ring: Keyring, kid: string): Promise<string | undefined> {
  for (const secret of ring.secrets) if ((await keyIdOf(secret)) === kid) return secret;
  return undefined;
}

/**
 * A purpose-bound key derived from one master key (HKDF-SHA256, the purpose as info), so one
 * secret serves cursors, upload URLs and encryption without any two sharing a key.
 */
export function derivedKey(
  secret: string,
  purpose: string,
  algorithm: SubtleCryptoImportKeyAlgorithm,
  usages: string[],
): Promise<CryptoKey> {
  return cached(derived, `${algorithm.name}\u0000${purpose}\u0000${secret}`, async () =>
    crypto.subtle.deriveKey(hkdf(purpose), await baseKey(secret), algorithm, false, usages),
  );
}
