import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import type { ZodType } from "zod";
import type { ErrorCode } from "../lib/errors";
import { admission } from "./admission/admission";
import type { AppEnv } from "./env";
import { errorResponses } from "./openapi/errors";
import { operatorAuth } from "./operator";
import { type Guard, ROUTE_META, type RouteMeta } from "./registry";
import { unmatched } from "./routing";
import { internalTarget } from "./shard-route";
import { bodyLimit, DEFAULT_BODY_LIMIT, jsonBody, NO_BODY_LIMIT } from "./wire";

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
const VALIDATION_CODES: ErrorCode[] = [
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
const BODY_CODES: ErrorCode[] = [
  "request_body_empty",
  "request_body_not_json",
  "request_body_too_deep",
  "request_content_type_mismatch",
  ...VALIDATION_CODES,
];

const OPERATOR_CODES: ErrorCode[] = [
  "operator_token_invalid",
  "https_required",
  "request_body_too_large",
  "service_unavailable",
  "internal_error",
];

/** The largest body the route accepts: its declared limit, the JSON default, or room for an ignored `{}`. */
const limitOf = (schemas: RouteMeta["schemas"], declared?: number) =>
  declared ?? (schemas.json ? DEFAULT_BODY_LIMIT : NO_BODY_LIMIT);

function schemasOf(route: RouteConfig): RouteMeta["schemas"] {
  const content = route.request?.body?.content as Record<string, { schema?: unknown }> | undefined;
  return {
    json: content?.["application/json"]?.schema as ZodType | undefined,
    query: route.request?.query as ZodType | undefined,
    param: route.request?.params as ZodType | undefined,
  };
}

/** The codes a public route can answer: its guards' and its own. */
function routeCodes(route: RouteConfig, guard: Guard): ErrorCode[] {
  const { json, query } = schemasOf(route);
  const codes: ErrorCode[] = [
    // Any authenticated route: a client address throttled for failed authentications (429), and a key
    // gate that cannot answer (503), whether or not the route has a budget of its own.
    ...(guard.anonymous ? [] : [...AUTH_CODES, "rate_limit_exceeded" as const, "rate_limit_unavailable" as const]),
    "https_required",
    "service_unavailable",
    "internal_error",
  ];
  if (guard.session) codes.push("auth_required", "agency_resolution_failed");
  if (guard.endpoint) codes.push("rate_limit_misconfigured");
  if (guard.scope || guard.alsoScopes?.length) codes.push("auth.scope_denied");
  if (guard.roles) codes.push("role_forbidden");
  if (guard.conditional === "write") codes.push("if_match_malformed", "resource_version_mismatch");
  if (MUTATING.has(route.method)) {
    codes.push(
      "idempotency.missing",
      "idempotency_key_invalid",
      "idempotency_key_conflict",
      "idempotency_key_in_progress",
      "idempotency_unavailable",
      // Every write commits a mark, and most an event: both count against the agency's quotas.
      "agency_quota_exceeded",
      // A write that meets its agency's move between shards at the switch.
      "agency_moving",
    );
  }
  codes.push("request_body_too_large");
  if (json) codes.push(...BODY_CODES);
  if (query) codes.push("request_query_invalid");
  return [...new Set([...codes, ...(guard.errors ?? [])])];
}

type Described<R> = R & { getRoutingPath(): string };

/** Names the matched operation in the request's wide event, before any guard can refuse it. */
function nameOperation(operation: string): MiddlewareHandler<AppEnv> {
  return async function nameOperation(c, next) {
    const event = c.get("event");
    if (event) event.route = operation;
    await next();
  };
}

function describe<const R extends RouteConfig>(
  route: R,
  meta: RouteMeta,
  middleware: MiddlewareHandler<AppEnv>[],
  security: { [scheme: string]: string[] }[],
): Described<R> {
  const described = createRoute({
    ...route,
    security,
    middleware: [nameOperation(route.operationId ?? `${route.method} ${route.path}`), ...middleware],
    request: route.request?.body
      ? { ...route.request, body: { ...route.request.body, required: true } }
      : route.request,
    responses: { ...route.responses, ...errorResponses(meta.codes) },
  });
  return Object.assign(described, { [ROUTE_META]: meta }) as unknown as Described<R>;
}

/**
 * A public route: the OpenAPI definition plus its guards, in the order the request
 * meets them: the admission step (authentication, rate limit, scope and role, the body
 * through its cap, idempotency), the JSON wire checks, then schema validation.
 */
export function publicRoute<const R extends RouteConfig>(guard: Guard, route: R): Described<R> {
  const schemas = schemasOf(route);
  const limit = limitOf(schemas, guard.bodyLimit);
  const middleware: MiddlewareHandler<AppEnv>[] = [];
  if (guard.sandboxOnly) middleware.push(sandboxOnly());
  middleware.push(
    guard.anonymous
      ? bodyLimit(limit)
      : admission({
          session: guard.session,
          endpoint: guard.endpoint,
          scope: guard.scope,
          alsoScopes: guard.alsoScopes,
          roles: guard.roles,
          bodyLimit: limit,
          conditionalRead: guard.conditional === "read" && route.method === "get",
          currentVersion: guard.currentVersion,
          idempotent: MUTATING.has(route.method),
          replaysToCallerOnly: guard.replaysToCallerOnly,
        }),
  );
  if (schemas.json) middleware.push(jsonBody());
  const meta: RouteMeta = {
    ...guard,
    bodyLimit: limit,
    surface: "public",
    method: route.method,
    path: route.path,
    codes: routeCodes(route, guard),
    schemas,
  };
  const security: { [scheme: string]: string[] }[] = guard.anonymous ? [] : [{ ApiKey: [] }];
  if (guard.session) security.push({ SessionCookie: [] });
  return describe(route, meta, middleware, security);
}

/** An internal (dashboard) route: the same shape, behind the operator token. */
export function internalRoute<const R extends RouteConfig>(errors: readonly ErrorCode[], route: R): Described<R> {
  const schemas = schemasOf(route);
  const limit = limitOf(schemas);
  const middleware: MiddlewareHandler<AppEnv>[] = [operatorAuth(), bodyLimit(limit)];
  if (schemas.json) middleware.push(jsonBody());
  middleware.push(internalTarget());
  const codes = [
    ...new Set([
      ...OPERATOR_CODES,
      ...(MUTATING.has(route.method) ? (["agency_moving"] as ErrorCode[]) : []),
      ...(schemas.json ? BODY_CODES : []),
      ...(schemas.query ? (["request_query_invalid"] as ErrorCode[]) : []),
      ...errors,
    ]),
  ];
  const meta: RouteMeta = {
    surface: "internal",
    method: route.method,
    path: route.path,
    codes,
    schemas,
    errors,
    bodyLimit: limit,
  };
  return describe(route, meta, middleware, [{ OperatorToken: [] }]);
}

/** An OpenAPI content block of one JSON media type: `content: json(Schema)` in a route's body or response. */
export const json = <T extends ZodType>(schema: T) => ({ "application/json": { schema } }) as const;

/**
 * The 201 of a route that creates a resource a route reads: its body, and a `Location`
 * naming where to read it (`example` is such a path). A replay repeats the Location.
 */
export const created = <T extends ZodType>(description: string, schema: T, example: string) =>
  ({
    201: {
      description,
      headers: {
        Location: {
          description: "The absolute URL of the created resource, where a GET reads it.",
          schema: { type: "string", format: "uri", example: `https://api.example.com${example}` },
        },
      },
      content: json(schema),
    },
  }) as const;

/** Names the created resource's URL (`path` on this origin) in the answer's `Location`. */
export const setLocation = (c: Context<AppEnv>, path: string): void => {
  c.header("Location", new URL(path, c.req.url).toString());
};

/**
 * The first guard of a sandbox-only route (`sandboxOnly` in its guard): where the API runs
 * in live mode the route does not exist, so it answers exactly like an unknown path,
 * before authentication, budgets or body checks can tell it apart.
 */
function sandboxOnly(): MiddlewareHandler<AppEnv> {
  return async function sandboxOnly(c, next) {
    if (c.env.API_MODE === "live") throw unmatched(c);
    await next();
  };
}
