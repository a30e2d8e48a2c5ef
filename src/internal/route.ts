import { createRoute, type RouteConfig } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import type { ZodType } from "zod";
import type { AppEnv } from "../env";
import { ApiError, type ErrorCode } from "../lib/errors";
import { errorResponses } from "../lib/openapi-errors";
import { registerPath, unmatched } from "../lib/routing";
import { registerRouteSchemas } from "../lib/validation";
import { jsonBody } from "../lib/wire";
import { BODY_CODES } from "../lib/route";
import { timingSafeEqual } from "../lib/crypto";

/**
 * The internal surface exists only where an operator token is configured; otherwise
 * its paths answer exactly like unknown paths.
 */
export function operatorAuth(): MiddlewareHandler<AppEnv> {
  return async function operatorAuth(c, next) {
    const token = c.env.OPERATOR_TOKEN;
    if (!token) throw unmatched(c);
    const presented = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
    if (!timingSafeEqual(presented, token)) throw new ApiError("operator_token_invalid");
    await next();
  };
}

const COMMON: ErrorCode[] = ["operator_token_invalid", "https_required", "internal_error"];

export function internalRoute<const R extends RouteConfig>(errors: readonly ErrorCode[], route: R): R & { getRoutingPath(): string } {
  const body = (route.request?.body?.content as Record<string, { schema?: unknown }> | undefined)?.["application/json"]?.schema as ZodType | undefined;
  const middleware: MiddlewareHandler<AppEnv>[] = [operatorAuth()];
  if (body) middleware.push(jsonBody());
  registerPath(route.method, route.path);
  registerRouteSchemas(route.method, route.path, { json: body, query: route.request?.query as ZodType | undefined });
  const codes = [...COMMON, ...(body ? BODY_CODES : []), ...(route.request?.query ? (["request_query_invalid"] as ErrorCode[]) : []), ...errors];
  return createRoute({
    ...route,
    security: [{ OperatorToken: [] }],
    middleware,
    request: route.request?.body ? { ...route.request, body: { ...route.request.body, required: true } } : route.request,
    responses: { ...route.responses, ...errorResponses(codes) },
  }) as unknown as R & { getRoutingPath(): string };
}
