import type { MiddlewareHandler } from "hono";
import { newId } from "../lib/ids";
import { log } from "../lib/log";
import type { AppEnv } from "./env";
import { unexpectedFailure } from "./errors";

/**
 * Every response carries `X-Request-Id`; error envelopes repeat it as `error.request_id`.
 * An unexpected failure is logged here, once, when the request ends.
 */
export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestId(c, next) {
    const id = newId("req");
    c.set("requestId", id);
    await next();
    c.header("X-Request-Id", id);
    const err = unexpectedFailure(c);
    if (err) log.error("request failed", { request_id: id, path: c.req.path, error: String(err), stack: err.stack });
  };
}
