import type { MiddlewareHandler } from "hono";
import { secretsEqual } from "../lib/crypto/crypto";
import { DomainError } from "../lib/errors";
import type { AppEnv } from "./env";
import { unmatched } from "./routing";

/**
 * The internal surface exists only where an operator token is configured; otherwise
 * its paths answer exactly like unknown paths.
 */
export function operatorAuth(): MiddlewareHandler<AppEnv> {
  return async function operatorAuth(c, next) {
    const token = c.env.OPERATOR_TOKEN;
    if (!token) throw unmatched(c);
    const presented = /^Bearer\s+(.+)$/i.exec(c.req.header("authorization") ?? "")?.[1]?.trim() ?? "";
    if (!(await secretsEqual(presented, token))) throw new DomainError("operator_token_invalid");
    await next();
  };
}
