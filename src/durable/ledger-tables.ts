/** The bytes an entry's kept answer takes: its headers' JSON and its sealed body. */
const ANSWER_BYTES = (row: string) =>
  `(coalesce(length(CAST(${row}.headers AS BLOB)), 0) + coalesce(length(CAST(${row}.body AS BLOB)), 0))`;

/**
 * The idempotency ledger's tables: one row per key (`entries`), and the bytes of the answers
 * kept (`answer_bytes`), exact through every change of an entry by its triggers.
 */
export function createLedgerTables(sql: SqlStorage): void {
  sql.exec(
    "CREATE TABLE IF NOT EXISTS entries (agency_id TEXT NOT NULL, idem_key TEXT NOT NULL, " +
      "request_hash TEXT NOT NULL, expires_at INTEGER NOT NULL, lease_token TEXT, lease_until INTEGER, " +
      "status INTEGER, headers TEXT, body TEXT, PRIMARY KEY (agency_id, idem_key)) WITHOUT ROWID",
  );
  sql.exec("CREATE INDEX IF NOT EXISTS entries_expiry ON entries (expires_at)");
  // The bytes of the answers kept, exact through every change of an entry.
  sql.exec("CREATE TABLE IF NOT EXISTS answer_bytes (id INTEGER PRIMARY KEY CHECK (id = 1), used INTEGER NOT NULL)");
  sql.exec(
    `CREATE TRIGGER IF NOT EXISTS entries_bytes_insert AFTER INSERT ON entries BEGIN
      UPDATE answer_bytes SET used = used + ${ANSWER_BYTES("new")} WHERE id = 1; END`,
  );
  sql.exec(
    `CREATE TRIGGER IF NOT EXISTS entries_bytes_update AFTER UPDATE ON entries BEGIN
      UPDATE answer_bytes SET used = used + ${ANSWER_BYTES("new")} - ${ANSWER_BYTES("old")} WHERE id = 1; END`,
  );
  sql.exec(
    `CREATE TRIGGER IF NOT EXISTS entries_bytes_delete AFTER DELETE ON entries BEGIN
      UPDATE answer_bytes SET used = used - ${ANSWER_BYTES("old")} WHERE id = 1; END`,
  );
  sql.exec(
    `INSERT INTO answer_bytes (id, used)
      SELECT 1, (SELECT coalesce(sum(${ANSWER_BYTES("entries")}), 0) FROM entries)
      WHERE NOT EXISTS (SELECT 1 FROM answer_bytes)`,
  );
}

/** The bytes of answers the ledger keeps now. */
export const keptAnswerBytes = (sql: SqlStorage): number =>
  sql.exec<{ used: number }>("SELECT used FROM answer_bytes WHERE id = 1").one().used;
