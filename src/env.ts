import type { Caller } from "./auth/caller";

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
}

export interface AppEnv {
  Bindings: Bindings;
  Variables: AppVariables;
}
