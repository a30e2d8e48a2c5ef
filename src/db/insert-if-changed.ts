import { getTableColumns, sql } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import type { Db } from "./client";

/**
 * An INSERT of `row` that writes only when the statement just before it in the same batch
 * changed a row: placed after a guarded UPDATE, a change that lost its race writes
 * nothing more. `row` is keyed by the table's column names as drizzle knows them; a
 * column it lacks is NULL, and a value that is itself SQL is inlined.
 */
export function insertIfChanged<T extends SQLiteTable>(db: Db, table: T, row: Record<string, unknown>) {
  // INSERT … SELECT lists every column of the table, in table order.
  const selected = sql.join(
    Object.keys(getTableColumns(table)).map((name) => sql`${row[name] ?? null}`),
    sql`, `,
  );
  return db.insert(table).select(sql`SELECT ${selected} WHERE changes() > 0`);
}
