import { type Db, database } from "../db/client";
import { type RequestEvent, timed } from "./wide-event";

/** A key's request as it runs on D1: its database handle and the bookmark it has reached. */
export interface D1Session {
  db: Db;
  /** The binding itself, for code that takes `Env` (the session stands in for `DB`). */
  binding: D1Database;
  bookmark(): string | null;
}

/** The statement a timed one stands for, as `batch` needs it. */
const UNTIMED = Symbol("untimed statement");
const RUNS = new Set<PropertyKey>(["first", "run", "all", "raw"]);

/** `stmt` with the time each of its runs waits on D1 added to the request's `d1Ms`. */
function timedStatement(stmt: D1PreparedStatement, event: RequestEvent): D1PreparedStatement {
  return new Proxy(stmt, {
    get(target, prop) {
      if (prop === UNTIMED) return target;
      if (prop === "bind") return (...values: unknown[]) => timedStatement(target.bind(...values), event);
      const value = Reflect.get(target, prop) as unknown;
      if (typeof value !== "function") return value;
      if (RUNS.has(prop))
        return (...args: unknown[]) =>
          timed(event, "d1Ms", (value as (...a: unknown[]) => Promise<unknown>).apply(target, args));
      return value.bind(target);
    },
  });
}

const untimed = (stmt: D1PreparedStatement): D1PreparedStatement =>
  (stmt as D1PreparedStatement & { [UNTIMED]?: D1PreparedStatement })[UNTIMED] ?? stmt;

/**
 * Opens a D1 session at `constraint`: a read starts at the key's latest write's bookmark
 * (or anywhere when there is none), a write at the primary. With the request's `event`,
 * the time its statements wait on D1 is counted in the event's `d1Ms`.
 */
export function openSession(d1: D1Database, constraint: string, event?: RequestEvent): D1Session {
  const session = d1.withSession(constraint);
  // Drizzle's D1 driver needs only `prepare` and `batch`, which a session has.
  const binding = (event
    ? {
        prepare: (query: string) => timedStatement(session.prepare(query), event),
        batch: (statements: D1PreparedStatement[]) => timed(event, "d1Ms", session.batch(statements.map(untimed))),
        getBookmark: () => session.getBookmark(),
      }
    : session) as unknown as D1Database;
  return { db: database(binding), binding, bookmark: () => session.getBookmark() };
}

/** Where a request's session starts: a read at the key's bookmark, a write at the primary. */
export const sessionConstraint = (read: boolean, bookmark: string | undefined) =>
  read ? (bookmark ?? "first-unconstrained") : "first-primary";
