import { inArray, type SQL, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import type { Db } from "../db/client";
import { DomainError } from "../lib/errors";
import { etagOf } from "../lib/etag";
import { quotaRefusal } from "./quotas";

/**
 * The versions a conditional write accepts (from If-Match): the write happens only while
 * the resource has one of them. Undefined accepts any version (no If-Match, or `*`); an
 * empty list accepts none.
 */
export type IfVersion = (readonly number[] & { readonly sent?: readonly string[] }) | undefined;

/** The versions of an If-Match, carrying the tags as sent so a refusal can name them. */
export const ifVersionOf = (versions: readonly number[], sent: readonly string[]): IfVersion =>
  Object.assign([...versions], { sent });

/** The writing statement's version guard, or undefined when any version is accepted. */
export function versionIn(column: SQLiteColumn, ifVersion: IfVersion): SQL | undefined {
  if (ifVersion === undefined) return undefined;
  return ifVersion.length ? inArray(column, [...ifVersion]) : sql`0`;
}

/** True when the resource's version is one the write accepts. */
export const versionAccepted = (current: number, ifVersion: IfVersion): boolean =>
  ifVersion === undefined || ifVersion.includes(current);

/**
 * 412 `resource_version_mismatch`, naming the tags sent and the current version as ETags.
 * When a sent tag is weak (`W/"v7"`), the message says why it cannot match: If-Match
 * compares strongly.
 */
export function versionMismatch(ifVersion: NonNullable<IfVersion>, current: number): DomainError {
  const sent = ifVersion.sent ?? ifVersion.map(etagOf);
  const weak = sent.some((tag) => tag.startsWith("W/"));
  return new DomainError("resource_version_mismatch", {
    ...(weak && {
      message:
        `If-Match compares entity tags strongly, so a weak tag (W/…) never matches; nothing was written. ` +
        `Send the ETag as the resource answered it: ${etagOf(current)}.`,
    }),
    details: { expected: sent.join(", "), current: etagOf(current) },
  });
}

/** Refuses a write up front when the version read already differs (the statement checks again). */
export function checkVersion(current: number, ifVersion: IfVersion): void {
  if (ifVersion !== undefined && !ifVersion.includes(current)) throw versionMismatch(ifVersion, current);
}

/**
 * The version a writing statement sets itself, so that its RETURNING row shows the version
 * the change made (the version triggers run after RETURNING is taken, and leave a
 * statement that sets `version` alone).
 */
export const nextVersion = (column: SQLiteColumn): SQL => sql`${column} + 1`;

/**
 * The answer to a write that changes nothing: `row` as read, once the precondition holds;
 * `alsoWrite` (the request's commit mark) is written alone, so a retry is answered the same.
 */
export async function keepAsItIs<T extends { agencyId: string; version: number }>(
  db: Db,
  row: T,
  alsoWrite: BatchItem<"sqlite">[] = [],
  ifVersion?: IfVersion,
): Promise<T> {
  checkVersion(row.version, ifVersion);
  const [first, ...rest] = alsoWrite;
  if (first) await db.batch([first, ...rest]).catch((err: unknown) => quotaRefusal(db, row.agencyId, err));
  return row;
}
