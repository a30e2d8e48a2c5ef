import { sign, verify } from "./crypto/crypto";
import { base64url, fromBase64url } from "./crypto/encoding";
import type { Keyring } from "./crypto/keyring";
import { DomainError } from "./errors";

/** A position in (created_at, id) order. */
export interface Position {
  createdAt: string;
  id: string;
}

const PURPOSE = "cursor:v1";

/** A cursor's MAC is cut to 128 bits: the cursor travels in URLs. */
const MAC_LENGTH = 22;

const invalid = (reason: string) =>
  new DomainError("request_query_invalid", {
    message: `The cursor is not valid for this list: ${reason}. Restart from the first page.`,
    details: { errors: [{ field: "cursor", code: "validation_string_pattern", message: reason }] },
  });

/**
 * Keyset cursors over (created_at, id): stable while rows are inserted, and signed so a
 * changed, truncated or foreign cursor is refused as `request_query_invalid`. `list`
 * names the list and its filters, so a cursor works only for the list it was minted for.
 * `<payload>.<key id>.<mac>`; a cursor from before the keyring (`<payload>.<mac>`) still
 * pages while some key of the ring signed it.
 */
export function encodeCursor(keyring: Keyring, list: string, at: Position): Promise<string> {
  return seal(keyring, list, [at.createdAt, at.id]);
}

export async function decodeCursor(
  keyring: Keyring,
  list: string,
  cursor: string | undefined,
): Promise<Position | undefined> {
  const k = await open(keyring, list, cursor);
  if (k === undefined) return undefined;
  if (typeof k[0] !== "string" || typeof k[1] !== "string") throw invalid("malformed cursor");
  return { createdAt: k[0], id: k[1] };
}

/** A cursor of a list kept in sequence order: the last sequence number the previous page showed. */
export function encodeSequenceCursor(keyring: Keyring, list: string, sequence: number): Promise<string> {
  return seal(keyring, list, [sequence]);
}

export async function decodeSequenceCursor(
  keyring: Keyring,
  list: string,
  cursor: string | undefined,
): Promise<number | undefined> {
  const k = await open(keyring, list, cursor);
  if (k === undefined) return undefined;
  if (k.length !== 1 || !Number.isSafeInteger(k[0]) || (k[0] as number) < 0) throw invalid("malformed cursor");
  return k[0] as number;
}

async function seal(keyring: Keyring, list: string, k: unknown[]): Promise<string> {
  const payload = base64url(new TextEncoder().encode(JSON.stringify({ l: list, k })));
  return `${payload}.${await sign(keyring, PURPOSE, payload, MAC_LENGTH)}`;
}

/** The key a cursor carries, once its signature and list are checked; undefined for no cursor. */
async function open(keyring: Keyring, list: string, cursor: string | undefined): Promise<unknown[] | undefined> {
  if (cursor === undefined || cursor === "") return undefined;
  const [payload, ...signature] = cursor.split(".");
  if (!payload || signature.length < 1 || signature.length > 2 || signature.includes("")) {
    throw invalid("malformed cursor");
  }
  if (!(await verify(keyring, PURPOSE, payload, signature.join("."), MAC_LENGTH))) {
    throw invalid("integrity check failed");
  }
  let parsed: { l?: unknown; k?: unknown };
  try {
    parsed = JSON.parse(new TextDecoder().decode(fromBase64url(payload)));
  } catch {
    throw invalid("malformed cursor");
  }
  if (parsed.l !== list) throw invalid("cursor was issued for another list");
  if (!Array.isArray(parsed.k)) throw invalid("malformed cursor");
  return parsed.k;
}
