import { eq } from "drizzle-orm";
import {
  type Cursor,
  copyStatement,
  countRows,
  deleteStatement,
  mutedBatch,
  purgeStatement,
  type Row,
  readPage,
  readRow,
} from "../../db/move-rows";
import { MOVED_TABLES, type MovedTable, movedTable } from "../../db/moved-tables";
import { agencyMoves, agencyShards } from "../../db/schema";
import { controlDb, enterSecret, type ShardName, shardD1, shardEnv } from "../../db/shards";
import { anchorStaff } from "../../domain/people/placement";
import { nowIso } from "../../lib/ids";
import { sendJob } from "../../media/jobs";
import type { AgencyMove } from "./moves";

/** Rows a copy or delete page takes; each row is one statement of the page's batch. */
const PAGE_ROWS = 100;
/** Journal entries one catch-up page applies. */
const JOURNAL_PAGE = 100;
/** The journal left after a catch-up page that lets the move fence the agency's writes and switch. */
const SWITCH_BELOW = 50;
/** How long the old shard keeps refusing the agency's writes after the switch: a request admitted before it ends. */
export const dwellMs = (env: Env): number => Number(env.MOVE_DWELL_MS ?? "") || 10_000;

/** A move's progress: the step it is at and where that step stopped. */
export interface Progress {
  step: string;
  cursor: { table?: number; at?: Cursor; seq?: number; until?: number; lane?: number } | null;
  status?: AgencyMove["status"];
  rowsCopied?: number;
  changesApplied?: number;
  rowsDeleted?: number;
}

const d1 = (env: Env, shard: string) => shardD1(env, shard as ShardName);

const departure = (db: D1Database, move: AgencyMove, state: string) =>
  db
    .prepare(
      `INSERT INTO agency_departures (agency_id, move_id, state) VALUES (?1, ?2, ?3)
       ON CONFLICT (agency_id) DO UPDATE SET move_id = excluded.move_id, state = excluded.state`,
    )
    .bind(move.agencyId, move.id, state);

/**
 * Marks the agency leaving its shard (every change journalled from now on) and arriving on
 * the new one (whose jobs leave its rows alone until the switch).
 */
export async function begin(env: Env, move: AgencyMove): Promise<Progress> {
  await departure(d1(env, move.toShard), move, "arriving").run();
  await departure(d1(env, move.fromShard), move, "copying").run();
  return { step: "copy", cursor: { table: 0, at: null } };
}

/**
 * A key names its minting user, who the new shard must hold first: platform staff, or a user
 * who has since left for another agency (whose row is copied as it is, only so the key can
 * name it, as a user moved across shards leaves one behind).
 */
async function anchorMinters(env: Env, move: AgencyMove, t: MovedTable, rows: Row[]): Promise<void> {
  if (t.name !== "api_keys") return;
  const minters = new Set(rows.map((r) => r.minted_by_user_id).filter((m): m is string => typeof m === "string"));
  const from = d1(env, move.fromShard);
  const to = d1(env, move.toShard);
  for (const minter of minters) {
    await anchorStaff(env, move.toShard as ShardName, minter);
    if (await to.prepare("SELECT 1 FROM users WHERE id = ?1").bind(minter).first()) continue;
    const row = await from.prepare("SELECT * FROM users WHERE id = ?1").bind(minter).first<Row>();
    if (row) await mutedBatch(to, [copyStatement(to, movedTable("users")!, row)]);
  }
}

/** Copies a page of the current table's rows as they are now; past the last table, catches up. */
export async function copy(env: Env, move: AgencyMove, cursor: NonNullable<Progress["cursor"]>): Promise<Progress> {
  const index = cursor.table ?? 0;
  const t = MOVED_TABLES[index];
  if (!t) return { step: "catch_up", cursor: { seq: 0 } };
  const from = d1(env, move.fromShard);
  const to = d1(env, move.toShard);
  const page = await readPage(from, t, move.agencyId, cursor.at ?? null, PAGE_ROWS);
  await anchorMinters(env, move, t, page.rows);
  if (page.rows.length)
    await mutedBatch(
      to,
      page.rows.map((row) => copyStatement(to, t, row)),
    );
  const rowsCopied = move.rowsCopied + page.rows.length;
  if (page.rows.length < PAGE_ROWS) return { step: "copy", cursor: { table: index + 1, at: null }, rowsCopied };
  return { step: "copy", cursor: { table: index, at: page.next }, rowsCopied };
}

/**
 * Applies a page of the journal to the new shard: each row named is copied as it is now, or
 * deleted there when it is gone (or no longer the agency's). Answers how many entries it took.
 */
async function applyJournal(env: Env, move: AgencyMove): Promise<number> {
  const from = d1(env, move.fromShard);
  const to = d1(env, move.toShard);
  const { results } = await from
    .prepare("SELECT seq, table_name, row_key FROM move_journal WHERE agency_id = ?1 ORDER BY seq LIMIT ?2")
    .bind(move.agencyId, JOURNAL_PAGE)
    .all<{ seq: number; table_name: string; row_key: string }>();
  if (!results.length) return 0;
  const latest = new Map<string, { t: MovedTable; key: (string | number | null)[] }>();
  for (const entry of results) {
    const t = movedTable(entry.table_name);
    if (!t) continue;
    // The last entry of a row decides its place: rows are read as they are now.
    latest.delete(`${t.name}:${entry.row_key}`);
    latest.set(`${t.name}:${entry.row_key}`, { t, key: JSON.parse(entry.row_key) });
  }
  const statements: D1PreparedStatement[] = [];
  for (const { t, key } of latest.values()) {
    const row = await readRow(from, t, move.agencyId, key);
    if (row) await anchorMinters(env, move, t, [row]);
    statements.push(row ? copyStatement(to, t, row) : deleteStatement(to, t, key));
  }
  await mutedBatch(to, statements);
  await from
    .prepare("DELETE FROM move_journal WHERE agency_id = ?1 AND seq <= ?2")
    .bind(move.agencyId, results.at(-1)!.seq)
    .run();
  return results.length;
}

/** Catches up with the journal; once what is left is short, fences the agency's writes to switch. */
export async function catchUp(env: Env, move: AgencyMove): Promise<Progress> {
  const applied = await applyJournal(env, move);
  const changesApplied = move.changesApplied + applied;
  if (applied >= SWITCH_BELOW) return { step: "catch_up", cursor: null, changesApplied };
  await departure(d1(env, move.fromShard), move, "fenced").run();
  return { step: "drain", cursor: null, status: "switching", changesApplied };
}

/** With the agency's writes fenced, applies what the journal still holds; then checks. */
export async function drain(env: Env, move: AgencyMove): Promise<Progress> {
  const applied = await applyJournal(env, move);
  const changesApplied = move.changesApplied + applied;
  return { step: applied ? "drain" : "check", cursor: null, changesApplied };
}

/** Whether both shards hold the same rows of the agency, table by table: the differences, if any. */
export async function compare(env: Env, move: AgencyMove): Promise<string[]> {
  const [before, after] = await Promise.all([
    countRows(d1(env, move.fromShard), move.agencyId),
    countRows(d1(env, move.toShard), move.agencyId),
  ]);
  return MOVED_TABLES.filter((t) => before.get(t.name) !== after.get(t.name)).map(
    (t) => `${t.name}: ${before.get(t.name)} on ${move.fromShard}, ${after.get(t.name)} on ${move.toShard}`,
  );
}

/**
 * The switch: the directory learns the agency's secrets where the new shard is not the
 * control database, the map names the new shard, the new shard serves the agency, and every
 * key's gate routes there. Answers the keys told.
 */
export async function flip(env: Env, move: AgencyMove): Promise<string[]> {
  const to = d1(env, move.toShard);
  const { results: secrets } = await to
    .prepare(
      `SELECT s.hash AS hash, s.key_id AS keyId FROM api_keys k JOIN api_key_secrets s ON s.key_id = k.id
       WHERE k.agency_id = ?1`,
    )
    .bind(move.agencyId)
    .all<{ hash: string; keyId: string }>();
  for (const s of secrets) await enterSecret(env, move.toShard as ShardName, { ...s, agencyId: move.agencyId });
  await controlDb(env)
    .update(agencyShards)
    .set({ shard: move.toShard })
    .where(eq(agencyShards.agencyId, move.agencyId))
    .run();
  await to.prepare("DELETE FROM agency_departures WHERE agency_id = ?1").bind(move.agencyId).run();
  const keys = [...new Set(secrets.map((s) => s.keyId))];
  const { results: all } = await to
    .prepare("SELECT id FROM api_keys WHERE agency_id = ?1")
    .bind(move.agencyId)
    .all<{ id: string }>();
  for (const { id } of all) if (!keys.includes(id)) keys.push(id);
  for (const keyId of keys) await env.KEY_GATE.getByName(keyId).moveTo(move.toShard as ShardName);
  return keys;
}

/** The queue work sent again after a switch, lane by lane: what each lane pages and how it sends one. */
const REQUEUED = [
  {
    sql: `SELECT id, created_at AS o, rowid AS r, NULL AS due FROM webhook_deliveries
          WHERE agency_id = ?1 AND status = 'pending' AND (?2 IS NULL OR (created_at, rowid) > (?2, ?3))
          ORDER BY created_at, rowid`,
    send: (env: Env, id: string) => env.WEBHOOK_QUEUE.send({ delivery_id: id }),
  },
  {
    sql: `SELECT id, id AS o, rowid AS r, expires_at AS due FROM media_uploads
          WHERE agency_id = ?1 AND status = 'pending' AND (?2 IS NULL OR (id, rowid) > (?2, ?3)) ORDER BY id, rowid`,
    send: (env: Env, id: string, due: string | null) =>
      sendJob(env.MEDIA_QUEUE, { kind: "upload.settle", upload_id: id }, settleDelay(due)),
  },
  {
    sql: `SELECT id, id AS o, rowid AS r, NULL AS due FROM media_deliveries
          WHERE agency_id = ?1 AND status IN ('queued', 'delivering') AND (?2 IS NULL OR (id, rowid) > (?2, ?3))
          ORDER BY id, rowid`,
    send: (env: Env, id: string) => sendJob(env.MEDIA_QUEUE, { kind: "delivery", delivery_id: id }),
  },
] as const;

/** Seconds until an upload's settling is due (two minutes after it expires), within a queue's 12-hour limit. */
const settleDelay = (due: string | null) =>
  Math.min(43_200, Math.max(1, Math.ceil(((due ? Date.parse(due) : Date.now()) - Date.now()) / 1000) + 120));

/**
 * Sends a page of the agency's queue work again from the new shard: messages sent before the
 * switch name the old shard, which no longer holds the rows (pending webhook deliveries,
 * uploads awaiting their settling, unfinished media deliveries). A delivery is still sent at
 * most once at a time: its consumer's lease holds it. Answers where the next page starts, or
 * undefined once every lane is done.
 */
export async function requeue(
  env: Env,
  move: AgencyMove,
  at: { lane: number; after: Cursor },
): Promise<{ lane: number; after: Cursor } | undefined> {
  const lane = REQUEUED[at.lane];
  if (!lane) return undefined;
  const { results } = await d1(env, move.toShard)
    .prepare(`${lane.sql} LIMIT ${PAGE_ROWS}`)
    .bind(move.agencyId, at.after?.[0] ?? null, at.after?.[1] ?? null)
    .all<{ id: string; o: string; r: number; due: string | null }>();
  const scoped = shardEnv(env, move.toShard as ShardName);
  for (const row of results) await lane.send(scoped, row.id, row.due);
  const last = results.at(-1);
  return results.length < PAGE_ROWS || !last
    ? { lane: at.lane + 1, after: null }
    : { lane: at.lane, after: [last.o, last.r] };
}

/** Deletes a page of the agency's rows on `shard`, children first; answers the rows deleted and what is left. */
export async function purgePage(
  env: Env,
  move: AgencyMove,
  shard: string,
  table: number,
): Promise<{ deleted: number; table: number }> {
  const db = d1(env, shard);
  for (let i = table; i >= 0; i--) {
    const t = MOVED_TABLES[i]!;
    const [, deleted] = await mutedBatch(db, [purgeStatement(db, t, move.agencyId, PAGE_ROWS)]);
    const n = deleted?.results.length ?? 0;
    if (n > 0) return { deleted: n, table: i };
  }
  return { deleted: 0, table: -1 };
}

/** The move's record, updated with its progress. */
export async function record(env: Env, move: AgencyMove, change: Partial<AgencyMove>): Promise<AgencyMove> {
  const updated = await controlDb(env)
    .update(agencyMoves)
    .set({ ...change, updatedAt: nowIso() })
    .where(eq(agencyMoves.id, move.id))
    .returning()
    .get();
  return updated ?? move;
}

export const lastTable = MOVED_TABLES.length - 1;
