import type { Hono, MiddlewareHandler } from "hono";
import type { Admitted, AppEnv } from "./env";

/** What a request answered again carries: the gate's settled answer and the request id it keeps. */
interface Rerun {
  requestId: string;
  admitted: Promise<Admitted>;
}

const reruns = new WeakMap<Request, Rerun>();

/** The gate's answer handed to a request answered again, so the gate is asked once per request. */
export const rerunOf = (request: Request): Rerun | undefined => reruns.get(request);

/**
 * A read may run on the isolate's last confirmed caller while the key's gate decides
 * (see `authenticate`). When the gate refuses, or confirms another caller, the read's
 * answer is thrown away here and the request is dispatched again on the gate's answer,
 * with the same request id; nothing the read computed reaches the client.
 */
export function rerunDiscarded(app: () => Hono<AppEnv>): MiddlewareHandler<AppEnv> {
  return async function rerunDiscarded(c, next) {
    await next();
    const admitted = c.get("discarded");
    if (!admitted) return;
    const request = new Request(c.req.raw);
    reruns.set(request, { requestId: c.get("requestId"), admitted });
    let ctx: ExecutionContext | undefined;
    try {
      ctx = c.executionCtx as ExecutionContext;
    } catch {
      ctx = undefined; // no execution context (called outside a Worker invocation)
    }
    const answer = await app().fetch(request, c.env, ctx);
    c.set("unexpected", undefined);
    c.res = undefined;
    c.res = answer;
  };
}
