import type { Context } from "hono";
import type { AppEnv } from "../env";
import { ApiError } from "./errors";

/**
 * Every route the service serves, by method and path template, so that an unmatched
 * request can be told apart: a known path with another method is 405 with `Allow`;
 * an unknown path is 404.
 */
const routes: { method: string; pattern: RegExp }[] = [];

export function registerPath(method: string, template: string) {
  const pattern = new RegExp(`^${template.replaceAll(/\{\w+\}/g, "[^/]+").replaceAll(/:\w+/g, "[^/]+")}/?$`);
  routes.push({ method: method.toUpperCase(), pattern });
}

export function allowedMethods(path: string): string[] {
  const methods = new Set(routes.filter((r) => r.pattern.test(path)).map((r) => r.method));
  if (methods.has("GET")) methods.add("HEAD");
  if (methods.size) methods.add("OPTIONS");
  return [...methods].sort();
}

/** The error of a request no route matched. The internal surface exists only while an operator token is configured. */
export function unmatched(c: Context<AppEnv>): ApiError {
  const path = c.req.path;
  const hidden = path.startsWith("/internal/") && !c.env.OPERATOR_TOKEN;
  const allowed = hidden ? [] : allowedMethods(path);
  if (allowed.length) {
    return new ApiError("request_method_not_allowed", {
      message: `${c.req.method} is not allowed on ${path}. Allowed: ${allowed.join(", ")}.`,
      details: { methods_allowed: allowed },
      headers: { Allow: allowed.join(", ") },
    });
  }
  if (path.startsWith("/api/v1/listings/")) return new ApiError("endpoint_not_in_scope");
  return new ApiError("request_path_not_found", { message: `No route ${c.req.method} ${path}.` });
}
