import { env } from "cloudflare:workers";
import { AsyncLocalStorage } from "node:async_hooks";
import worker from "../../src/index";

/**
 * D1's production limits (developers.cloudflare.com/d1/platform/limits). The local
 * runtime enforces some of them and not others; in tests every statement is held to all.
 */
export const D1_LIMITS = {
  boundParameters: 100,
  likePatternBytes: 50,
  statementBytes: 100_000,
  valueBytes: 1_000_000,
  functionArguments: 32,
  /** Queries per Worker invocation on the paid plan. */
  queriesPerInvocation: 1_000,
} as const;

/** Every breach seen since the last check; the setup fails the test that caused one. */
export const breaches: string[] = [];

const invocation = new AsyncLocalStorage<{ queries: number }>();
const bytes = (s: string) => new TextEncoder().encode(s).byteLength;
const GUARDED = Symbol.for("d1-production-limits");
const NOT_FUNCTIONS = new Set(["in", "values", "exists", "not", "and", "or", "on", "using", "as", "select", "from"]);

function breach(limit: string, sql: string): never {
  const message = `D1 production limit breached: ${limit}. Statement: ${sql.slice(0, 300)}`;
  breaches.push(message);
  throw new Error(message);
}

/** The placeholders' positions (1-based) that stand right after LIKE or GLOB. */
function patternPositions(sql: string): Set<number> {
  const positions = new Set<number>();
  let index = 0;
  const re = /'(?:[^']|'')*'|"(?:[^"]|"")*"|\b(like|glob)\s+\?|\?/gi;
  for (let m = re.exec(sql); m; m = re.exec(sql)) {
    if (m[0].startsWith("'") || m[0].startsWith('"')) continue;
    index++;
    if (m[1]) positions.add(index);
  }
  return positions;
}

/** The largest number of arguments any function call in the statement takes. */
function widestCall(sql: string): number {
  const text = sql.replace(/'(?:[^']|'')*'/g, "''");
  let widest = 0;
  for (const m of text.matchAll(/([A-Za-z_][A-Za-z0-9_]*)\(/g)) {
    if (NOT_FUNCTIONS.has(m[1]!.toLowerCase())) continue;
    let depth = 0;
    let args = 1;
    for (let i = m.index + m[0].length - 1; i < text.length; i++) {
      const ch = text[i];
      if (ch === "(") depth++;
      else if (ch === ")" && --depth === 0) break;
      else if (ch === "," && depth === 1) args++;
    }
    widest = Math.max(widest, args);
  }
  return widest;
}

function checkStatement(sql: string, params: unknown[]): void {
  if (bytes(sql) > D1_LIMITS.statementBytes) breach(`statement over ${D1_LIMITS.statementBytes} bytes`, sql);
  if (params.length > D1_LIMITS.boundParameters) {
    breach(`${params.length} bound parameters (at most ${D1_LIMITS.boundParameters})`, sql);
  }
  if (widestCall(sql) > D1_LIMITS.functionArguments) {
    breach(`a function call with over ${D1_LIMITS.functionArguments} arguments`, sql);
  }
  for (const position of patternPositions(sql)) {
    const pattern = params[position - 1];
    if (typeof pattern === "string" && bytes(pattern) > D1_LIMITS.likePatternBytes) {
      breach(`LIKE/GLOB pattern of ${bytes(pattern)} bytes (at most ${D1_LIMITS.likePatternBytes})`, sql);
    }
  }
  for (const value of params) {
    const size =
      typeof value === "string"
        ? bytes(value)
        : value instanceof ArrayBuffer
          ? value.byteLength
          : ArrayBuffer.isView(value)
            ? value.byteLength
            : 0;
    if (size > D1_LIMITS.valueBytes) breach(`a value of ${size} bytes (at most ${D1_LIMITS.valueBytes})`, sql);
  }
}

function countQuery(sql: string): void {
  const store = invocation.getStore();
  if (!store) return;
  store.queries++;
  if (store.queries > D1_LIMITS.queriesPerInvocation) {
    breach(`over ${D1_LIMITS.queriesPerInvocation} queries in one invocation`, sql);
  }
}

let openSession: ((binding: D1Database, constraint?: string) => D1DatabaseSession) | undefined;

/** An actual D1 session of `binding`, not the pass-through one the Worker gets in tests. */
export function realSession(binding: D1Database, constraint?: string): D1DatabaseSession {
  if (!openSession) throw new Error("the D1 guard is not installed");
  return openSession(binding, constraint);
}

/** Runs `fn` as one Worker invocation: its D1 queries count against one budget. */
export const asInvocation = <T>(fn: () => T): T => invocation.run({ queries: 0 }, fn);

/**
 * Wraps the D1 binding's prototypes, so every statement the Worker, its Durable Objects
 * or the tests prepare is checked against the production limits, and the Worker's
 * handlers, so the queries of each invocation are counted.
 */
function guardD1(db: D1Database): void {
  const dbProto = Object.getPrototypeOf(db) as Record<PropertyKey, unknown>;
  if (dbProto[GUARDED]) return;
  dbProto[GUARDED] = true;
  const stmtProto = Object.getPrototypeOf(db.prepare("SELECT 1")) as Record<string, unknown>;
  const sqlOf = new WeakMap<object, string>();

  const prepare = dbProto.prepare as (this: D1Database, sql: string) => D1PreparedStatement;
  dbProto.prepare = function (this: D1Database, sql: string) {
    checkStatement(sql, []);
    const statement = prepare.call(this, sql);
    sqlOf.set(statement, sql);
    return statement;
  };
  const bind = stmtProto.bind as (this: D1PreparedStatement, ...values: unknown[]) => D1PreparedStatement;
  stmtProto.bind = function (this: D1PreparedStatement, ...values: unknown[]) {
    const sql = sqlOf.get(this) ?? "";
    checkStatement(sql, values);
    const bound = bind.apply(this, values);
    sqlOf.set(bound, sql);
    return bound;
  };
  for (const method of ["first", "run", "all", "raw"]) {
    const original = stmtProto[method] as (this: D1PreparedStatement, ...args: unknown[]) => unknown;
    stmtProto[method] = function (this: D1PreparedStatement, ...args: unknown[]) {
      countQuery(sqlOf.get(this) ?? "");
      return original.apply(this, args);
    };
  }
  const batch = dbProto.batch as (this: D1Database, statements: D1PreparedStatement[]) => unknown;
  dbProto.batch = function (this: D1Database, statements: D1PreparedStatement[]) {
    for (const s of statements) countQuery(sqlOf.get(s) ?? "");
    return batch.call(this, statements);
  };

  // Locally D1 has no replicas: a session reads and writes the one database. The Worker's
  // sessions run their statements through the binding they came from, so the checks above,
  // and every test's spies and faults on that binding, see each statement. `realSession`
  // opens an actual D1 session.
  const withSession = dbProto.withSession as (this: D1Database, constraint?: string) => D1DatabaseSession;
  openSession = (binding, constraint) => withSession.call(binding, constraint);
  dbProto.withSession = function (this: D1Database, constraint?: string) {
    const session = withSession.call(this, constraint);
    return {
      prepare: (sql: string) => this.prepare(sql),
      batch: (statements: D1PreparedStatement[]) => this.batch(statements),
      getBookmark: () => session.getBookmark(),
    };
  };

  const handlers = worker as unknown as Record<string, (...args: unknown[]) => unknown>;
  for (const name of ["fetch", "queue", "scheduled"]) {
    const handler = handlers[name];
    if (handler) handlers[name] = (...args: unknown[]) => asInvocation(() => handler.apply(worker, args));
  }
}

guardD1(env.DB);
