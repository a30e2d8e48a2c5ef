import { inArray, type SQL, sql } from "drizzle-orm";
import type { SQLiteColumn } from "drizzle-orm/sqlite-core";
import { DomainError } from "../lib/errors";
import { etagOf } from "../lib/etag";

/**
 * The versions a conditional write accepts (from If-Match): the write happens only while
 * the resource has one of them. Undefined accepts any version (no If-Match, or `*`); an
 * empty list accepts none.
 */
export type IfVersion = readonly number[] | undefined;

/** The writing statement's version guard, or undefined when any version is accepted. */
export function versionIn(column: SQLiteColumn, ifVersion: IfVersion): SQL | undefined {
  if (ifVersion === undefined) return undefined;
  return ifVersion.length ? inArray(column, [...ifVersion]) : sql`0`;
}

/** True when the resource's version is one the write accepts. */
export const versionAccepted = (current: number, ifVersion: IfVersion): boolean =>
  ifVersion === undefined || ifVersion.includes(current);

/** 412 `resource_version_mismatch`, naming the accepted and the current version as ETags. */
export function versionMismatch(ifVersion: readonly number[], current: number): DomainError {
  return new DomainError("resource_version_mismatch", {
    details: { expected: ifVersion.map(etagOf).join(", "), current: etagOf(current) },
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
