import type { MiddlewareHandler } from "hono";
import type { AppEnv } from "../env";
import { ApiError } from "../lib/errors";

export const IDEMPOTENCY_HEADER = "X-Idempotency-Key";
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;

/** Every mutating request names its idempotency key; GET, HEAD and OPTIONS never reach this. */
export function idempotency(): MiddlewareHandler<AppEnv> {
  return async function idempotency(c, next) {
    const key = c.req.header(IDEMPOTENCY_HEADER);
    if (key === undefined || key === "") throw new ApiError("idempotency.missing");
    if (!IDEMPOTENCY_KEY_PATTERN.test(key)) throw new ApiError("idempotency_key_invalid", { details: { max_length: 128, received_length: key.length } });
    await next();
  };
}
