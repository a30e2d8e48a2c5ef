import type { Caller } from "../domain/roles";
import type { RateDecision } from "../durable/key-gate";
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

export interface AppVariables {
  requestId: string;
  /** The routes of both surfaces, built once when the app is created. */
  routes: RouteRegistry;
  caller: Caller;
  /** Set by the idempotency guard on mutating public routes. */
  idempotency?: IdempotencyContext;
  /** The route's body limit in bytes, set before anything reads the body. */
  bodyLimit?: number;
  /** The rate decision the key's gate took during authentication. */
  rateLimit?: RateDecision;
  /** An unexpected failure, logged once when the request ends unless a guard recovered from it. */
  unexpected?: Error;
}

export interface AppEnv {
  Bindings: Env;
  Variables: AppVariables;
}
