import { and, asc, eq, getTableColumns, gt, type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { jobCursors } from "../db/schema";
import { SealError, sealPrefix } from "../lib/crypto/crypto";
import { KEY_ID_LENGTH, type Keyring, keyIdOf } from "../lib/crypto/keyring";
import { nowIso } from "../lib/ids";
import {
  calendarCredentials,
  type SealedColumn,
  type SealedRow,
  seal,
  storageCredentials,
  unseal,
  webhookSigningSecret,
} from "./sealed-columns";

/**
 * The columns sealed at rest for as long as their rows live. Cached idempotent answers are
 * sealed too, but expire within 24 hours; cursors and upload URLs are only signed, and expire.
 */
const SEALED_COLUMNS: readonly SealedColumn[] = [webhookSigningSecret, calendarCredentials, storageCredentials];

/** Rows per page: one SELECT, then one batch of guarded UPDATEs of 3 bound parameters each. */
const RESEAL_PAGE = 50;
/**
 * Pages per column per run: at most 3 × (10 × 2 + 2) + 3 statements, 1,500 rows; the rest waits
 * for the next run, which starts where this one stopped.
 */
const RESEAL_MAX_PAGES = 10;

/** What `remaining_by_key` calls seals made before the keyring, which do not name their key. */
export const UNNAMED_KEY = "v1";

export interface ResealReport {
  /** The id of `SECRET_KEY`, which seals. */
  currentKeyId: string;
  /** The ids of the keys of `SECRET_KEY_PREVIOUS`, which still open. */
  previousKeyIds: string[];
  /** Values sealed again under the newest key by this run. */
  resealed: number;
  /** Values this run found that open under no key of the ring (left as they are). */
  unopenable: number;
  /** Values still sealed under another key than the newest, by key id (`v1`: made before the keyring). */
  remainingByKey: Record<string, number>;
  /** Nothing is sealed under any other key than the newest: the older keys can be dropped. */
  done: boolean;
}

interface StaleRow extends SealedRow {
  id: string;
  sealed: string;
}

/** Values not sealed under the newest key (empty ones hold no secret: a sandbox calendar). */
const stale = (column: SealedColumn, prefix: string): SQL =>
  sql`${column.sealed} <> '' AND substr(${column.sealed}, 1, ${prefix.length}) <> ${prefix}`;

/** The sealed column's name in its table's drizzle object. */
const columnKey = (column: SealedColumn) =>
  Object.entries(getTableColumns(column.table)).find(([, c]) => c === column.sealed)![0];

async function staleRows(db: Db, column: SealedColumn, prefix: string, after: string | undefined) {
  const rows = await db
    .select({ id: column.id, agencyId: column.agencyId, boundId: column.boundId, sealed: column.sealed })
    .from(column.table)
    .where(and(stale(column, prefix), after === undefined ? undefined : gt(column.id, after)))
    .orderBy(asc(column.id))
    .limit(RESEAL_PAGE);
  return rows as StaleRow[];
}

/**
 * One page of `column` sealed again under the newest key, in id order after `after`. Each
 * UPDATE holds to the value it read, so a value changed meanwhile (new credentials, a
 * refreshed token) is left to its writer, who sealed it under the newest key already.
 */
async function resealPage(db: Db, keyring: Keyring, column: SealedColumn, prefix: string, after?: string) {
  const rows = await staleRows(db, column, prefix, after);
  const updates = [];
  let unopenable = 0;
  for (const row of rows) {
    let plaintext: string;
    try {
      plaintext = await unseal(keyring, column, row, row.sealed);
    } catch (err) {
      if (!(err instanceof SealError)) throw err;
      unopenable++;
      continue;
    }
    const next = await seal(keyring, column, row, plaintext);
    updates.push(
      db
        .update(column.table)
        .set({ [columnKey(column)]: next })
        .where(and(eq(column.id, row.id), eq(column.sealed, row.sealed))),
    );
  }
  const [first, ...rest] = updates;
  const results = first ? await db.batch([first, ...rest]) : [];
  const resealed = results.reduce((n, r) => n + (r as D1Result).meta.changes, 0);
  return { rows: rows.length, last: rows.at(-1)?.id, resealed, unopenable };
}

/** How many values of `column` each older key still seals. */
function remainingOf(db: Db, column: SealedColumn, prefix: string) {
  const kid = sql<string>`CASE WHEN substr(${column.sealed}, 1, 3) = 'v2.'
    THEN substr(${column.sealed}, 4, ${KEY_ID_LENGTH}) ELSE ${UNNAMED_KEY} END`;
  return db.select({ kid, n: sql<number>`count(*)` }).from(column.table).where(stale(column, prefix)).groupBy(kid);
}

/** Where each column's next run starts: after the last id the previous run read (none: from the start). */
const cursorName = (column: SealedColumn) => `reseal:${column.name}`;

/**
 * Seals again under the ring's newest key what an older key sealed, a bounded number of pages
 * per column. Each run goes on from where the previous one stopped, and starts over once it
 * reached the end, so values it cannot open never hold back the ones after them. A value that
 * opens under no key of the ring is left as it is and counted, under its key id, until someone
 * replaces it.
 */
export async function reseal(db: Db, keyring: Keyring): Promise<ResealReport> {
  const prefix = await sealPrefix(keyring);
  let resealed = 0;
  let unopenable = 0;
  for (const column of SEALED_COLUMNS) {
    const name = cursorName(column);
    const stored = await db.select().from(jobCursors).where(eq(jobCursors.name, name)).get();
    let after: string | undefined = stored?.position ?? undefined;
    for (let page = 0; page < RESEAL_MAX_PAGES; page++) {
      const done = await resealPage(db, keyring, column, prefix, after);
      resealed += done.resealed;
      unopenable += done.unopenable;
      after = done.rows < RESEAL_PAGE ? undefined : done.last;
      if (after === undefined) break;
    }
    const at = nowIso();
    const position = after ?? null;
    await db
      .insert(jobCursors)
      .values({ name, position, updatedAt: at })
      .onConflictDoUpdate({ target: jobCursors.name, set: { position, updatedAt: at } });
  }
  const remaining = new Map<string, number>();
  for (const column of SEALED_COLUMNS) {
    for (const { kid, n } of await remainingOf(db, column, prefix)) remaining.set(kid, (remaining.get(kid) ?? 0) + n);
  }
  const [current, ...previous] = await Promise.all(keyring.secrets.map(keyIdOf));
  return {
    currentKeyId: current!,
    previousKeyIds: previous,
    resealed,
    unopenable,
    remainingByKey: Object.fromEntries(remaining),
    done: remaining.size === 0,
  };
}
