import { MOVED_TABLES, type MovedTable, movedTable } from "./moved-tables";

/**
 * The rows of one agency, table by table, as a move reads, copies, checks and deletes them.
 * Every statement names the agency (its own column, or its parent row's) and takes its values
 * as bound parameters, at most one row's columns each (under D1's 100). Table and column names
 * come from `MOVED_TABLES` alone.
 */
type Value = string | number | null;
export type Row = Record<string, Value>;
/** Where a table's pages stopped: the last row's order columns; null before the first page. */
export type Cursor = Value[] | null;

/** The parent of a child table (its rows are the agency's through it). */
function parentOf(t: MovedTable): MovedTable | undefined {
  return typeof t.owner === "object" ? movedTable(t.owner.parent) : undefined;
}

/** `FROM … WHERE …` for the agency's rows of `t` (bound as ?1), the row aliased `r`. */
function fromAgency(t: MovedTable): string {
  if (typeof t.owner === "string") return `FROM ${t.name} AS r WHERE r.${t.owner} = ?1`;
  return `FROM ${t.owner.parent} AS p JOIN ${t.name} AS r ON r.${t.owner.via} = p.id WHERE p.agency_id = ?1`;
}

/** The columns a page of `t` is ordered by, qualified: the parent's first for a child table. */
function orderColumns(t: MovedTable): string[] {
  const parent = parentOf(t);
  return [...(parent ? parent.order.map((c) => `p.${c}`) : []), ...t.order.map((c) => `r.${c}`)];
}

const marks = (from: number, n: number) => Array.from({ length: n }, (_, i) => `?${from + i}`).join(", ");

/** A page of the agency's rows of `t` after `cursor`, in index order, and the cursor after it. */
export async function readPage(
  d1: D1Database,
  t: MovedTable,
  agencyId: string,
  cursor: Cursor,
  limit: number,
): Promise<{ rows: Row[]; next: Cursor }> {
  const order = orderColumns(t);
  const picked = order.map((c, i) => `${c} AS __o${i}`).join(", ");
  let after = "";
  if (cursor) {
    after = ` AND (${order.join(", ")}) > (${marks(2, order.length)})`;
    // A child table's rows: the parent's own range as well, so the walk starts where it stopped.
    const parent = parentOf(t);
    if (parent) {
      const own = order.slice(0, parent.order.length);
      after += ` AND (${own.join(", ")}) >= (${marks(2, own.length)})`;
    }
  }
  const sql = `SELECT ${picked}, r.* ${fromAgency(t)}${after} ORDER BY ${order.join(", ")} LIMIT ${limit}`;
  const { results } = await d1
    .prepare(sql)
    .bind(agencyId, ...(cursor ?? []))
    .all<Row>();
  const rows = results.map((r) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith("__o"))));
  const last = results.at(-1);
  return { rows, next: last ? order.map((_, i) => last[`__o${i}`] ?? null) : cursor };
}

/**
 * A statement writing `row` into `t` as it is (or replacing the row of its key), unless a row
 * it names in another moved table is not there yet: such a row was written after the move
 * began, and comes with the journal.
 */
export function copyStatement(d1: D1Database, t: MovedTable, row: Row): D1PreparedStatement {
  const columns = Object.keys(row);
  const at = (column: string) => columns.indexOf(column) + 1;
  const refs = [...(t.refs ?? []), ...(typeof t.owner === "object" ? [[t.owner.via, t.owner.parent] as const] : [])];
  const guards = refs
    .filter(([column]) => at(column) > 0)
    .map(([column, table]) => `(?${at(column)} IS NULL OR EXISTS (SELECT 1 FROM ${table} WHERE id = ?${at(column)}))`);
  const where = guards.length ? ` WHERE ${guards.join(" AND ")}` : "";
  return d1
    .prepare(`INSERT OR REPLACE INTO ${t.name} (${columns.join(", ")}) SELECT ${marks(1, columns.length)}${where}`)
    .bind(...columns.map((c) => row[c] ?? null));
}

/** The agency's row of `t` with primary key `key`; undefined when it is gone (or is another agency's). */
export async function readRow(d1: D1Database, t: MovedTable, agencyId: string, key: Value[]): Promise<Row | undefined> {
  const match = t.key.map((k, i) => `r.${k} = ?${i + 2}`).join(" AND ");
  const row = await d1
    .prepare(`SELECT r.* ${fromAgency(t)} AND ${match}`)
    .bind(agencyId, ...key)
    .first<Row>();
  return row ?? undefined;
}

/** A statement deleting the row of `t` with primary key `key`. */
export function deleteStatement(d1: D1Database, t: MovedTable, key: Value[]): D1PreparedStatement {
  return d1
    .prepare(`DELETE FROM ${t.name} WHERE ${t.key.map((k, i) => `${k} = ?${i + 1}`).join(" AND ")}`)
    .bind(...key);
}

/** A statement deleting up to `limit` of the agency's rows of `t`, answering how many it deleted. */
export function purgeStatement(d1: D1Database, t: MovedTable, agencyId: string, limit: number): D1PreparedStatement {
  return d1
    .prepare(
      `DELETE FROM ${t.name} WHERE rowid IN (SELECT r.rowid ${fromAgency(t)} LIMIT ${limit}) RETURNING 1 AS gone`,
    )
    .bind(agencyId);
}

/** How many rows of each moved table the agency has on a database: one statement per table, in one batch. */
export async function countRows(d1: D1Database, agencyId: string): Promise<Map<string, number>> {
  const results = await d1.batch<{ n: number }>(
    MOVED_TABLES.map((t) => d1.prepare(`SELECT count(*) AS n ${fromAgency(t)}`).bind(agencyId)),
  );
  return new Map(MOVED_TABLES.map((t, i) => [t.name, results[i]?.results[0]?.n ?? 0]));
}

/**
 * Runs a move's statements as one batch the schema's triggers skip (`move_mute` holds a row
 * only inside it): the rows carry what their triggers derived already, or go whole.
 */
export function mutedBatch(d1: D1Database, statements: D1PreparedStatement[]): Promise<D1Result[]> {
  return d1.batch([
    d1.prepare("INSERT INTO move_mute (id) VALUES (1)"),
    ...statements,
    d1.prepare("DELETE FROM move_mute"),
  ]);
}
