import type { MiddlewareHandler } from "hono";
import { kickOutbox } from "../webhooks/outbox/kick";
import type { AppEnv } from "./env";

/** After a successful change, drain the outbox in the background so its events leave within seconds. */
export function drainAfterWrites(): MiddlewareHandler<AppEnv> {
  return async function drainAfterWrites(c, next) {
    await next();
    if (c.req.method === "GET" || c.req.method === "HEAD" || c.req.method === "OPTIONS" || c.res.status >= 400) return;
    let ctx: Pick<ExecutionContext, "waitUntil">;
    try {
      ctx = c.executionCtx;
    } catch {
      return; // no execution context (called outside a Worker invocation)
    }
    kickOutbox(c.env, ctx);
  };
}
