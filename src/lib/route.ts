import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { ZodType } from "zod";
import type { AppEnv } from "../env";
import type { Role, Scope } from "../auth/caller";
import { authenticate, authorize } from "../auth/middleware";
import { idempotency } from "../guards/idempotency";
import { rateLimit, type EndpointName } from "../guards/rate-limit";
import type { ErrorCode } from "./errors";
import { errorResponses } from "./openapi-errors";
import { registerPath } from "./routing";
import { registerRouteSchemas } from "./validation";
import { jsonBody } from "./wire";

export interface Guard {
  /** Rate-limit budget name; the route is rate limited when set. */
  endpoint?: EndpointName;
  scope?: Scope;
  roles?: readonly Role[];
  /** Also accept the dashboard session cookie. */
  session?: boolean;
  /** Largest accepted body in bytes (413 above it). */
  bodyLimit?: number;
  /** The route's own error codes, beyond those its guards can answer. */
  errors?: readonly ErrorCode[];
}

const MUTATING = new Set(["post", "put", "patch", "delete"]);

const AUTH_CODES: ErrorCode[] = [
  "api_key_missing",
  "api_key_header_mismatch",
  "api_key_malformed_prefix",
  "api_key_malformed_length",
  "api_key_invalid",
  "api_key_revoked",
  "api_key_expired",
  "api_key_disabled",
  "api_key_wrong_mode",
];
export const VALIDATION_CODES: ErrorCode[] = [
  "validation.failed",
  "validation_type_mismatch",
  "validation_missing_required",
  "validation_unknown_field",
  "validation_out_of_range",
  "validation_enum_not_allowed",
  "validation_string_pattern",
  "validation_array_length",
  "validation_nested_error",
];

/** What any route with a JSON body can answer. */
export const BODY_CODES: ErrorCode[] = ["request_body_empty", "request_body_not_json", "request_body_too_large", "request_content_type_mismatch", ...VALIDATION_CODES];

/** What every route declares about itself, for the OpenAPI post-processing and tests. */
export interface RouteMeta extends Guard {
  method: string;
  path: string;
  codes: ErrorCode[];
}
export const publicRoutes: RouteMeta[] = [];

function bodySchema(route: RouteConfig): ZodType | undefined {
  const content = route.request?.body?.content as Record<string, { schema?: unknown }> | undefined;
  return content?.["application/json"]?.schema as ZodType | undefined;
}

/** The codes a route can answer: its guards' and its own. */
export function routeCodes(route: RouteConfig, guard: Guard): ErrorCode[] {
  const mutating = MUTATING.has(route.method);
  const body = bodySchema(route);
  const codes: ErrorCode[] = [...AUTH_CODES, "https_required", "internal_error"];
  if (guard.session) codes.push("auth_required", "agency_resolution_failed");
  if (guard.endpoint) codes.push("rate_limit_exceeded", "rate_limit_misconfigured", "rate_limit_unavailable");
  if (guard.scope) codes.push("auth.scope_denied");
  if (guard.roles) codes.push("role_forbidden");
  if (mutating) codes.push("idempotency.missing", "idempotency_key_invalid", "idempotency_key_conflict", "idempotency_key_in_progress", "idempotency_unavailable");
  if (body) codes.push(...BODY_CODES);
  if (route.request?.query) codes.push("request_query_invalid");
  return [...new Set([...codes, ...(guard.errors ?? [])])];
}

/**
 * A public route: the OpenAPI definition plus its guards, in the order the request
 * meets them: authentication, rate limit, scope and role, idempotency, body checks,
 * then schema validation.
 */
export function publicRoute<const R extends RouteConfig>(guard: Guard, route: R): R & { getRoutingPath(): string } {
  const body = bodySchema(route);
  const mutating = MUTATING.has(route.method);
  const middleware: MiddlewareHandler<AppEnv>[] = [authenticate({ session: guard.session, endpoint: guard.endpoint })];
  if (guard.endpoint) middleware.push(rateLimit(guard.endpoint));
  if (guard.scope || guard.roles) middleware.push(authorize({ scope: guard.scope, roles: guard.roles }));
  if (mutating) middleware.push(idempotency());
  if (body) middleware.push(jsonBody({ limit: guard.bodyLimit }));

  const codes = routeCodes(route, guard);
  registerPath(route.method, route.path);
  registerRouteSchemas(route.method, route.path, { json: body, query: route.request?.query as ZodType | undefined });
  publicRoutes.push({ ...guard, method: route.method, path: route.path, codes });

  return createRoute({
    ...route,
    security: [{ ApiKey: [] }, ...(guard.session ? [{ SessionCookie: [] }] : [])],
    middleware,
    request: route.request?.body ? { ...route.request, body: { ...route.request.body, required: true } } : route.request,
    responses: { ...route.responses, ...errorResponses(codes) },
  }) as unknown as R & { getRoutingPath(): string };
}
