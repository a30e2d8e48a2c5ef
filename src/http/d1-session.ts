import { type Db, database } from "../db/client";

/** A key's request as it runs on D1: its database handle and the bookmark it has reached. */
export interface D1Session {
  db: Db;
  /** The binding itself, for code that takes `Env` (the session stands in for `DB`). */
  binding: D1Database;
  bookmark(): string | null;
}

/**
 * Opens a D1 session at `constraint`: a read starts at the key's latest write's bookmark
 * (or anywhere when there is none), a write at the primary.
 */
export function openSession(d1: D1Database, constraint: string): D1Session {
  const session = d1.withSession(constraint);
  // Drizzle's D1 driver needs only `prepare` and `batch`, which a session has.
  const binding = session as unknown as D1Database;
  return { db: database(binding), binding, bookmark: () => session.getBookmark() };
}

/** Where a request's session starts: a read at the key's bookmark, a write at the primary. */
export const sessionConstraint = (read: boolean, bookmark: string | undefined) =>
  read ? (bookmark ?? "first-unconstrained") : "first-primary";
