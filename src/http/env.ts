import type { Db } from "../db/client";
import type { Caller } from "../domain/roles";
import type { RateDecision } from "../durable/key-gate/verdict";
import type { RouteRegistry } from "./registry";
import type { RequestEvent } from "./wide-event";

/** A mutating request's idempotency context: whose key it is, and which request it names. */
export interface IdempotencyContext {
  agencyId: string;
  idempotencyKey: string;
  /**
   * SHA-256 of the record's owner (the agency, or one caller for an answer carrying a
   * secret), method, path and body: the same key with another request is a conflict.
   */
  requestHash: string;
}

/**
 * What the admission step decided for a request (see `admission`): who calls, the rate
 * decision it was counted under, and the idempotency key it holds. The handler and the
 * response step read it; nothing else decides these.
 */
export interface Admission {
  caller: Caller;
  rate?: RateDecision;
  /** Set on mutating public routes: the ledger lease is held for this request. */
  idempotency?: IdempotencyContext;
}

interface AppVariables {
  requestId: string;
  /** The request's wide event, filled in by each step and written once when it ends (see `requestId`). */
  event: RequestEvent;
  /** The routes of both surfaces, built once when the app is created. */
  routes: RouteRegistry;
  /**
   * The request's database handle: the plain binding, or, once the admission step has
   * admitted a key, the key's D1 session (reads start at the key's latest write). Handlers
   * use only this one, or `d1` where code needs the binding itself; never `env.DB`.
   */
  db: Db;
  /** The binding `db` runs on. */
  d1: D1Database;
  /** The admitted caller (`admission.caller`), as handlers read it. */
  caller: Caller;
  /** Set by the admission step of every guarded public route. */
  admission: Admission;
  /** The route's body limit in bytes, set before anything reads the body. */
  bodyLimit?: number;
}

export interface AppEnv {
  Bindings: Env;
  Variables: AppVariables;
}
