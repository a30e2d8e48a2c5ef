import type { Db } from "../db/client";
import type { Caller } from "../domain/roles";
import type { RateDecision } from "../durable/key-gate";
import type { EarlyClaim } from "./idempotency";
import type { RouteRegistry } from "./registry";

/** What the idempotency guard puts on `c.var.idempotency` for the handler. */
export interface IdempotencyContext {
  agencyId: string;
  key: string;
  /**
   * SHA-256 of caller, method, path and body: the same key with another request, or from
   * another caller, is a conflict.
   */
  requestHash: string;
}

/** What the key's gate confirmed for a request: the caller, its rate decision and where its reads start. */
export interface Admitted {
  caller: Caller;
  rate?: RateDecision;
  /** The D1 bookmark of the key's latest committed write. */
  bookmark?: string;
}

export interface AppVariables {
  requestId: string;
  /**
   * The request's database handle: the plain binding, rebound by authentication to the
   * key's D1 session (reads start at the key's latest write). Handlers use only this one.
   */
  db: Db;
  /** The routes of both surfaces, built once when the app is created. */
  routes: RouteRegistry;
  caller: Caller;
  /** An idempotency claim started while the key's gate decided, for the idempotency guard to take over. */
  claim?: EarlyClaim;
  /** Set by the idempotency guard on mutating public routes. */
  idempotency?: IdempotencyContext;
  /** The route's body limit in bytes, set before anything reads the body. */
  bodyLimit?: number;
  /** The rate decision the key's gate took during authentication. */
  rateLimit?: RateDecision;
  /** Set while a read runs on the isolate's last confirmed caller, before the key's gate has answered. */
  speculating?: boolean;
  /**
   * The gate's answer to a read whose speculative result was thrown away (a refusal, or
   * another caller than the one the read ran on): the request is answered again on it.
   */
  discarded?: Promise<Admitted>;
  /**
   * Starts handing the write's D1 bookmark to the key's gate (once; later calls return the
   * same promise), so a guard can overlap it with its own last call. The request always
   * waits for it before answering.
   */
  handOffBookmark?: () => Promise<void>;
  /** An unexpected failure, logged once when the request ends unless a guard recovered from it. */
  unexpected?: Error;
}

export interface AppEnv {
  Bindings: Env;
  Variables: AppVariables;
}
