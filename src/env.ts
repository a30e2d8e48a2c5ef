import type { Caller } from "./auth/caller";
import type { IdempotencyContext } from "./guards/idempotency";
import type { RateDecision } from "./durable/key-gate";

/** Secrets that are optional in every environment (see README, "Configuration"). */
interface OptionalSecrets {
  /** Enables the internal (dashboard) surface; without it every /internal/ path is an unknown path. */
  OPERATOR_TOKEN?: string;
}
declare global {
  interface Env extends OptionalSecrets {}
  namespace Cloudflare {
    interface Env extends OptionalSecrets {}
  }
}

export type Bindings = Env;

export interface AppVariables {
  requestId: string;
  caller: Caller;
  /** Set by the idempotency guard on mutating public routes. */
  idempotency?: IdempotencyContext;
  /** The rate decision the key's gate took during authentication. */
  rateLimit?: RateDecision;
}

export interface AppEnv {
  Bindings: Bindings;
  Variables: AppVariables;
}
