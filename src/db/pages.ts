import { and, asc, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn, SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Keyring } from "../lib/crypto/keyring";
import { decodeCursor, encodeCursor } from "../lib/cursor";
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

/** D1 refuses a compound SELECT of more than this many terms. */
const D1_COMPOUND_TERMS = 5;

/**
 * The ids of every part (each a `SELECT id FROM (…)`) as one subquery for `IN`. The parts are
 * joined by UNION ALL in groups of at most D1_COMPOUND_TERMS, each group a subquery of its
 * own, and the groups the same way, so no compound SELECT passes D1's limit.
 */
export function unionOfIds(parts: SQL[]): SQL {
  let level = parts;
  while (level.length > D1_COMPOUND_TERMS) {
    const groups: SQL[] = [];
    for (let i = 0; i < level.length; i += D1_COMPOUND_TERMS)
      groups.push(sql`SELECT id FROM (${sql.join(level.slice(i, i + D1_COMPOUND_TERMS), sql` UNION ALL `)})`);
    level = groups;
  }
  return sql`(${sql.join(level, sql` UNION ALL `)})`;
}

/**
 * A value written into a statement rather than bound, to keep a statement of many parts
 * within D1's 100 bound parameters: only an event type of the catalog's alphabet, or a
 * whole number.
 */
export function literal(value: string | number): SQL {
  if (typeof value === "number") {
    if (!Number.isSafeInteger(value)) throw new Error(`not a whole number: ${value}`);
    return sql.raw(String(value));
  }
  if (!/^[a-z][a-z_.]*$/.test(value)) throw new Error(`not a plain name: ${value}`);
  return sql.raw(`'${value}'`);
}

/**
 * One page of `table` in (created_at, id) order, after the request's cursor. `list`
 * names the list and its filters (a cursor works only for the list it was minted for);
 * `where` holds the tenant and the filters, or builds them from the cursor condition when
 * a subquery needs it too. The cursor condition is one row-value comparison, so SQLite
 * walks the (…, created_at, id) index from the cursor on.
 */
export async function keysetPage<T extends Keyed>(
  db: Db,
  table: T,
  list: string,
  where: SQL | undefined | ((after: SQL | undefined) => SQL | undefined),
  req: PageRequest,
): Promise<Page<T["$inferSelect"]>> {
  const at = await decodeCursor(req.keyring, list, req.cursor);
  const after = at ? sql`(${table.createdAt}, ${table.id}) > (${at.createdAt}, ${at.id})` : undefined;
  const rows = (await db
    .select()
    .from(table as SQLiteTable)
    .where(typeof where === "function" ? where(after) : and(where, after))
    .orderBy(asc(table.createdAt), asc(table.id))
    .limit(req.limit + 1)) as (T["$inferSelect"] & { createdAt: string; id: string })[];
  const more = rows.length > req.limit;
  const page = more ? rows.slice(0, req.limit) : rows;
  const last = page[page.length - 1];
  return { rows: page, nextCursor: more && last ? await encodeCursor(req.keyring, list, last) : "" };
}
