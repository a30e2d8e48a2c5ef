import { sign, verify } from "../lib/crypto/crypto";
import type { Keyring } from "../lib/crypto/keyring";
import { DomainError } from "../lib/errors";
import { randomToken, sha256Hex } from "../lib/ids";
import { isPlatformRole } from "./roles";

export const KEY_PREFIXES = ["sk_live_", "sk_test_", "ma_live_"] as const;
export type KeyPrefix = (typeof KEY_PREFIXES)[number];
export type KeyMode = "test" | "live";

/** Secrets are a prefix and a 43-character base64url token (32 random bytes). */
const KEY_TOKEN_LENGTH = 43;
export const ROTATION_GRACE_MS = 30 * 24 * 60 * 60 * 1000;

const modeOfPrefix = (prefix: KeyPrefix): KeyMode => (prefix === "sk_test_" ? "test" : "live");
const prefixForMode = (mode: KeyMode): KeyPrefix => (mode === "test" ? "sk_test_" : "sk_live_");

/**
 * A secret's token is 24 random bytes (32 characters) and a tag of 11 characters: an HMAC of
 * the prefix and the random part under the Worker's keyring. The tag lets a secret be told
 * apart from a guess before any lookup (see `vouchesForKey`); the random part alone is 192 bits.
 */
const KEY_RANDOM_BYTES = 24;
const KEY_RANDOM_LENGTH = 32;
const KEY_TAG_LENGTH = 11;
const KEY_TAG_PURPOSE = "api-key-tag";

/** A new secret of `mode`, tagged under `ring` when it is given (a secret without a tag is all random). */
export async function mintSecret(mode: KeyMode, prefix: KeyPrefix = prefixForMode(mode), ring?: Keyring) {
  if (!ring) return prefix + randomToken(32);
  const head = prefix + randomToken(KEY_RANDOM_BYTES);
  const [, tag = ""] = (await sign(ring, KEY_TAG_PURPOSE, head, KEY_TAG_LENGTH)).split(".");
  return head + tag;
}

/**
 * Whether a well-formed secret carries the tag that this Worker's keyring gives the secrets it
 * mints: true for every key minted here (while the keyring still holds the key it was tagged
 * under), false for a guess but one in 2^66. It says nothing of whether the key is still valid.
 */
export function vouchesForKey(ring: Keyring, secret: string): Promise<boolean> {
  const prefix = KEY_PREFIXES.find((p) => secret.startsWith(p));
  if (!prefix || secret.length !== prefix.length + KEY_TOKEN_LENGTH) return Promise.resolve(false);
  const head = secret.slice(0, prefix.length + KEY_RANDOM_LENGTH);
  return verify(ring, KEY_TAG_PURPOSE, head, secret.slice(head.length), KEY_TAG_LENGTH);
}

export const hashSecret = (secret: string) => sha256Hex(secret);

/**
 * The checks that need no storage: prefix, length and mode. A failing key is refused
 * here, before anything is looked up.
 */
export function checkKeyFormat(secret: string, environmentMode: KeyMode): KeyPrefix {
  const prefix = KEY_PREFIXES.find((p) => secret.startsWith(p));
  if (!prefix) {
    const detected =
      /^[A-Za-z0-9]{1,12}_(?:[A-Za-z0-9]{1,12}_)?/.exec(secret)?.[0] ?? secret.slice(0, Math.min(3, secret.length));
    throw new DomainError("api_key_malformed_prefix", { details: { detected_prefix: detected } });
  }
  const expected = prefix.length + KEY_TOKEN_LENGTH;
  if (secret.length !== expected) {
    throw new DomainError("api_key_malformed_length", {
      details: { expected_length: expected, received_length: secret.length },
    });
  }
  if (modeOfPrefix(prefix) !== environmentMode) {
    throw new DomainError("api_key_wrong_mode", {
      message:
        environmentMode === "test"
          ? "A live key was sent to the sandbox; use an sk_test_ key."
          : "A sandbox key was sent to production; use an sk_live_ key.",
      details: { key_mode: modeOfPrefix(prefix), environment_mode: environmentMode },
    });
  }
  return prefix;
}

/** The parts of a key and of the presented secret that decide whether it authenticates. */
export interface KeyState {
  agencyId: string;
  isActive: boolean;
  revokedAt: string | null;
  expiresAt: string | null;
  mode: KeyMode;
  secret: { supersededAt: string | null; deactivatedAt: string | null };
  /** The user who minted the key, as it stands now; null when it no longer exists. */
  minter: { isActive: boolean; agencyId: string; role: string } | null;
}

export function checkKeyState(key: KeyState, nowMs: number, environmentMode: KeyMode): void {
  if (key.mode !== environmentMode)
    throw new DomainError("api_key_wrong_mode", { details: { key_mode: key.mode, environment_mode: environmentMode } });
  if (key.revokedAt) throw new DomainError("api_key_revoked");
  if (!key.isActive) throw new DomainError("api_key_disabled");
  checkMinter(key);
  if (key.expiresAt && Date.parse(key.expiresAt) <= nowMs) {
    throw new DomainError("api_key_expired", { details: { expired_at: key.expiresAt } });
  }
  const { supersededAt, deactivatedAt } = key.secret;
  if (deactivatedAt)
    throw new DomainError("api_key_invalid", {
      message: "This secret was replaced by a rotation and its grace window has ended.",
    });
  if (supersededAt && Date.parse(supersededAt) + ROTATION_GRACE_MS <= nowMs) {
    throw new DomainError("api_key_invalid", {
      message: "This secret was replaced by a rotation and its grace window has ended.",
    });
  }
}

/**
 * A key acts for the user who minted it: it works only while that user is active and,
 * for an agency user, still in the key's agency. The key itself is left as it is, so it
 * works again if the user is reactivated or moved back: disabled, not revoked.
 */
function checkMinter(key: Pick<KeyState, "agencyId" | "minter">): void {
  const { minter } = key;
  if (!minter?.isActive) {
    throw new DomainError("api_key_disabled", {
      message: "The user who minted this API key is deactivated or suspended; the key is disabled with it.",
      details: { reason: "minting_user_inactive" },
    });
  }
  if (!isPlatformRole(minter.role) && minter.agencyId !== key.agencyId) {
    throw new DomainError("api_key_disabled", {
      message: "The user who minted this API key has moved to another agency; the key is disabled.",
      details: { reason: "minting_user_moved" },
    });
  }
}
