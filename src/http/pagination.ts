import { z } from "@hono/zod-openapi";
import { and, eq, gt, or, type SQL } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { sign, timingSafeEqual } from "../lib/crypto";
import { DomainError } from "../lib/errors";
import { base64url, fromBase64url } from "../lib/ids";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 200;

export const cursorQuery = {
  cursor: z.string().max(512).optional().openapi({
    description:
      "Opaque cursor from a previous page's `next_cursor`. Omit for the first page. A cursor is bound to the list (and filters) it was minted for.",
    example: "eyJsIjoidXNlcnMiLCJrIjpbIjIwMjYtMTEtMjJUMTI6MDA6MDAuMDAwWiIsInVzcl8xIl19.Jx2Xb3sQ",
  }),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_PAGE_SIZE)
    .default(DEFAULT_PAGE_SIZE)
    .openapi({ description: "Page size, 1 to 200.", example: 50 }),
};

export function pageSchema<T extends z.ZodType>(item: T, name: string) {
  return z
    .object({
      data: z.array(item).openapi({ description: "The items of this page, oldest first." }),
      next_cursor: z
        .string()
        .openapi({ description: "Cursor of the next page; the empty string marks the end.", example: "" }),
    })
    .openapi(name);
}

interface Position {
  createdAt: string;
  id: string;
}

const PURPOSE = "cursor:v1";

/**
 * Keyset cursors over (created_at, id): stable while rows are inserted, and signed so a
 * changed, truncated or foreign cursor is refused as `request_query_invalid`.
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

/** The WHERE clause that continues after `at` in (created_at, id) order. */
export function after(createdAt: SQLiteColumn, id: SQLiteColumn, at: Position | undefined): SQL | undefined {
  if (!at) return undefined;
  return or(gt(createdAt, at.createdAt), and(eq(createdAt, at.createdAt), gt(id, at.id)));
}

/** Turns `limit + 1` fetched rows into a page and its `next_cursor`. */
export async function toPage<Row extends Position, Item>(
  secret: string,
  list: string,
  rows: Row[],
  limit: number,
  present: (row: Row) => Item,
): Promise<{ data: Item[]; next_cursor: string }> {
  const more = rows.length > limit;
  const pageRows = more ? rows.slice(0, limit) : rows;
  const last = pageRows[pageRows.length - 1];
  return { data: pageRows.map(present), next_cursor: more && last ? await encodeCursor(secret, list, last) : "" };
}
