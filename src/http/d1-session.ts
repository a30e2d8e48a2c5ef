import { type Db, database } from "../db/client";
import { type RequestEvent, timed } from "./wide-event";

/** A key's request as it runs on D1: its database handle and the bookmark it has reached. */
export interface D1Session {
  db: Db;
  /** The binding itself, for code that takes `Env` (the session stands in for `DB`). */
  binding: D1Database;
  bookmark(): string | null;
}

/**
 * A statement whose runs add the time they wait on D1 to the request's `d1Ms`. Only what
 * the query builder calls is here (binding and the four ways to run); `batch` takes the
 * statement it stands for.
 */
class TimedStatement {
  constructor(
    readonly inner: D1PreparedStatement,
    private readonly event: RequestEvent,
  ) {}

  bind(...values: unknown[]): TimedStatement {
    return new TimedStatement(this.inner.bind(...values), this.event);
  }

  first(column?: string) {
    return timed(this.event, "d1Ms", column === undefined ? this.inner.first() : this.inner.first(column));
  }

  run() {
    return timed(this.event, "d1Ms", this.inner.run());
  }

  all() {
    return timed(this.event, "d1Ms", this.inner.all());
  }

  raw(options?: { columnNames?: false }) {
    return timed(this.event, "d1Ms", this.inner.raw(options));
  }
}

const untimed = (stmt: D1PreparedStatement | TimedStatement): D1PreparedStatement =>
  stmt instanceof TimedStatement ? stmt.inner : stmt;

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
        prepare: (query: string) => new TimedStatement(session.prepare(query), event),
        batch: (statements: D1PreparedStatement[]) => timed(event, "d1Ms", session.batch(statements.map(untimed))),
        getBookmark: () => session.getBookmark(),
      }
    : session) as unknown as D1Database;
  return { db: database(binding), binding, bookmark: () => session.getBookmark() };
}

/** Where a request's session starts: a read at the key's bookmark, a write at the primary. */
export const sessionConstraint = (read: boolean, bookmark: string | undefined) =>
  read ? (bookmark ?? "first-unconstrained") : "first-primary";
