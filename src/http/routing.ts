import type { Context } from "hono";
import type { DomainError } from "../lib/errors";
import type { AppEnv } from "./env";
import { HttpError } from "./errors";

/** A path of a sandbox-only route (the test helpers) where the API runs in live mode: it does not exist there. */
export const hiddenInLive = (c: Context<AppEnv>) => c.env.API_MODE === "live" && c.var.routes.isSandboxOnly(c.req.path);

/**
 * The error of a request no route matched: a known path with another method is 405
 * with `Allow`; an unknown path is 404. The internal surface exists only while an
 * operator token is configured, and the test helpers only outside live mode.
 */
export function unmatched(c: Context<AppEnv>): DomainError {
  const path = c.req.path;
  const hidden = (path.startsWith("/internal/") && !c.env.OPERATOR_TOKEN) || hiddenInLive(c);
  const allowed = hidden ? [] : c.var.routes.allowedMethods(path);
  if (allowed.length) {
    return new HttpError("request_method_not_allowed", {
      message: `${c.req.method} is not allowed on ${path}. Allowed: ${allowed.join(", ")}.`,
      details: { methods_allowed: allowed },
      headers: { Allow: allowed.join(", ") },
    });
  }
  if (path.startsWith("/api/v1/listings/")) return new HttpError("endpoint_not_in_scope");
  return new HttpError("request_path_not_found", { message: `No route ${c.req.method} ${path}.` });
}
