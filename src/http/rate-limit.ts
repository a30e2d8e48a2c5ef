import type { Context, MiddlewareHandler } from "hono";
import type { EndpointName } from "../domain/budgets";
import type { RateDecision } from "../durable/key-gate";
import { DomainError } from "../lib/errors";
import { unavailableRetryAfter } from "../lib/transient";
import type { AppEnv } from "./env";

export { DEFAULT_BUDGETS, type EndpointName } from "../domain/budgets";

/** The spec's three-segment names, emitted in lowercase as its Limits section says. */
export const RATE_LIMIT_HEADERS = {
  limit: "x-rate-limit-limit",
  remaining: "x-rate-limit-remaining",
  reset: "x-rate-limit-reset",
} as const;

export function setRateHeaders(c: Context<AppEnv>, rate: RateDecision) {
  c.header(RATE_LIMIT_HEADERS.limit, String(rate.limit));
  c.header(RATE_LIMIT_HEADERS.remaining, String(rate.remaining));
  c.header(RATE_LIMIT_HEADERS.reset, String(rate.reset));
}

/**
 * Applies the rate decision for `endpoint`. For keys the decision was taken by the key's
 * gate during authentication (one round trip for both); a dashboard session is counted
 * in a gate of its own user. The headers go on every response after this point, errors
 * included.
 */
export function rateLimit(endpoint: EndpointName): MiddlewareHandler<AppEnv> {
  return async function rateLimit(c, next) {
    // A speculative read: authentication applies the gate's decision once it arrives.
    if (c.get("speculating")) return next();
    const caller = c.get("caller");
    let rate = c.get("rateLimit");
    if (!rate && caller.via === "session") {
      let answer: Awaited<ReturnType<DurableObjectStub<import("../durable/key-gate").KeyGate>["hit"]>>;
      try {
        answer = await c.env.KEY_GATE.getByName(`session:${caller.userId}`).hit(endpoint);
      } catch (err) {
        throw new DomainError("rate_limit_unavailable", { retryAfter: unavailableRetryAfter(err) });
      }
      if ("misconfigured" in answer) throw new DomainError("rate_limit_misconfigured", { details: { endpoint } });
      rate = answer;
    }
    if (!rate || typeof rate.limit !== "number" || typeof rate.remaining !== "number") {
      throw new DomainError("rate_limit_misconfigured", { details: { endpoint } });
    }
    setRateHeaders(c, rate);
    if (rate.retryAfter !== undefined) {
      throw new DomainError("rate_limit_exceeded", {
        message:
          `The budget of ${rate.limit} requests per 60 s for ${endpoint} is exhausted; ` +
          `retry after ${rate.retryAfter} s.`,
        details: { endpoint, limit: rate.limit, window_seconds: 60 },
        retryAfter: rate.retryAfter,
      });
    }
    await next();
  };
}
