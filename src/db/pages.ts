import { and, asc, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import { decodeCursor, encodeCursor } from "../lib/cursor";
import type { Keyring } from "../lib/keyring";
import type { Db } from "./client";

/** What a caller asks of a cursor list. */
export interface PageRequest {
  /** The keys cursors are signed and checked with. */
  keyring: Keyring;
  cursor?: string;
  limit: number;
}

export interface Page<Row> {
  rows: Row[];
  /** The cursor of the next page; the empty string marks the end. */
  nextCursor: string;
}

type Keyed = SQLiteTable & { createdAt: SQLiteColumn; id: SQLiteColumn };

/**
 * One page of `table` in (created_at, id) order, after the request's cursor. `list`
 * names the list and its filters (a cursor works only for the list it was minted for);
 * `where` holds the tenant and the filters. The cursor condition is one row-value
 * comparison, so SQLite walks the (…, created_at, id) index from the cursor on.
 */
export async function keysetPage<T extends Keyed>(
  db: Db,
  table: T,
  list: string,
  where: SQL | undefined,
  req: PageRequest,
): Promise<Page<T["$inferSelect"]>> {
  const at = await decodeCursor(req.keyring, list, req.cursor);
  const after = at ? sql`(${table.createdAt}, ${table.id}) > (${at.createdAt}, ${at.id})` : undefined;
  const rows = (await db
    .select()
    .from(table as SQLiteTable)
    .where(and(where, after))
    .orderBy(asc(table.createdAt), asc(table.id))
    .limit(req.limit + 1)) as (T["$inferSelect"] & { createdAt: string; id: string })[];
  const more = rows.length > req.limit;
  const page = more ? rows.slice(0, req.limit) : rows;
  const last = page[page.length - 1];
  return { rows: page, nextCursor: more && last ? await encodeCursor(req.keyring, list, last) : "" };
}
