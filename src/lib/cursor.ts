import { sign, timingSafeEqual } from "./crypto";
import { base64url, fromBase64url } from "./encoding";
import { DomainError } from "./errors";

/** A position in (created_at, id) order. */
export interface Position {
  createdAt: string;
  id: string;
}

const PURPOSE = "cursor:v1";

/**
 * Keyset cursors over (created_at, id): stable while rows are inserted, and signed so a
 * changed, truncated or foreign cursor is refused as `request_query_invalid`. `list`
 * names the list and its filters, so a cursor works only for the list it was minted for.
 */
export async function encodeCursor(secret: string, list: string, at: Position): Promise<string> {
  const payload = base64url(new TextEncoder().encode(JSON.stringify({ l: list, k: [at.createdAt, at.id] })));
  return `${payload}.${(await sign(secret, PURPOSE, payload)).slice(0, 22)}`;
}

export async function decodeCursor(
  secret: string,
  list: string,
  cursor: string | undefined,
): Promise<Position | undefined> {
  if (cursor === undefined || cursor === "") return undefined;
  const invalid = (reason: string) =>
    new DomainError("request_query_invalid", {
      message: `The cursor is not valid for this list: ${reason}. Restart from the first page.`,
      details: { errors: [{ field: "cursor", code: "validation_string_pattern", message: reason }] },
    });
  const [payload, mac, extra] = cursor.split(".");
  if (!payload || !mac || extra !== undefined) throw invalid("malformed cursor");
  const expected = (await sign(secret, PURPOSE, payload)).slice(0, 22);
  if (!timingSafeEqual(mac, expected)) throw invalid("integrity check failed");
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
