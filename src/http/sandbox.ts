import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "./env";
import { unmatched } from "./routing";

/**
 * The first guard of a sandbox-only route (`sandboxOnly` in its guard): where the API runs
 * in live mode the route does not exist, so it answers exactly like an unknown path,
 * before authentication, budgets or body checks can tell it apart.
 */
export function sandboxOnly(): MiddlewareHandler<AppEnv> {
  return async function sandboxOnly(c, next) {
    if (c.env.API_MODE === "live") throw unmatched(c);
    await next();
  };
}
