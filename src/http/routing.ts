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
  const did_you_mean = hidden ? [] : c.var.routes.nearPaths(path, (template) => visibleTo(c, template));
  const details = did_you_mean.length ? { did_you_mean } : {};
  const hint = did_you_mean.length ? ` Did you mean ${did_you_mean.join(" or ")}?` : "";
  if (path.startsWith("/api/v1/listings/")) {
    return new HttpError("endpoint_not_in_scope", {
      ...(hint && { message: `No such listing route.${hint}` }),
      details,
    });
  }
  return new HttpError("request_path_not_found", { message: `No route ${c.req.method} ${path}.${hint}`, details });
}

/**
 * Whether a route's template may be suggested to this request: no internal path without
 * the operator token, no sandbox helper in live.
 */
function visibleTo(c: Context<AppEnv>, template: string): boolean {
  if (template.startsWith("/internal/")) return Boolean(c.env.OPERATOR_TOKEN) && c.req.path.startsWith("/internal/");
  return !(c.env.API_MODE === "live" && c.var.routes.isSandboxOnly(template.replaceAll(/\{\w+\}/g, "x")));
}
