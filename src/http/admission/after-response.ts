import type { Context } from "hono";
import type { AppEnv } from "../env";

/** Keeps the invocation alive for `work` after the response, where the runtime allows it. */
export function afterResponse(c: Context<AppEnv>, work: Promise<unknown>): void {
  try {
    c.executionCtx.waitUntil(work);
  } catch {
    // No execution context (a request handed to the app directly): the work still runs.
  }
}
