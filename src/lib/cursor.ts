import { sign, verify } from "./crypto";
import { base64url, fromBase64url } from "./encoding";
import { DomainError } from "./errors";
import type { Keyring } from "./keyring";

/** A position in (created_at, id) order. */
export interface Position {
  createdAt: string;
  id: string;
}

const PURPOSE = "cursor:v1";

/** A cursor's MAC is cut to 128 bits: the cursor travels in URLs. */
const MAC_LENGTH = 22;

/**
 * Keyset cursors over (created_at, id): stable while rows are inserted, and signed so a
 * changed, truncated or foreign cursor is refused as `request_query_invalid`. `list`
 * names the list and its filters, so a cursor works only for the list it was minted for.
 * `<payload>.<key id>.<mac>`; a cursor from before the keyring (`<payload>.<mac>`) still
 * pages while some key of the ring signed it.
 */
export async function encodeCursor(keyring: Keyring, list: string, at: Position): Promise<string> {
  const payload = base64url(new TextEncoder().encode(JSON.stringify({ l: list, k: [at.createdAt, at.id] })));
  return `${payload}.${await sign(keyring, PURPOSE, payload, MAC_LENGTH)}`;
}

export async function decodeCursor(
  keyring: Keyring,
  list: string,
  cursor: string | undefined,
): Promise<Position | undefined> {
  if (cursor === undefined || cursor === "") return undefined;
  const invalid = (reason: string) =>
    new DomainError("request_query_invalid", {
      message: `The cursor is not valid for this list: ${reason}. Restart from the first page.`,
      details: { errors: [{ field: "cursor", code: "validation_string_pattern", message: reason }] },
    });
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
  const k = parsed.k;
  if (!Array.isArray(k) || typeof k[0] !== "string" || typeof k[1] !== "string") throw invalid("malformed cursor");
  return { createdAt: k[0], id: k[1] };
}
