import type { Context } from "hono";
import type { EndpointName } from "../../domain/budgets";
import type { RateDecision } from "../../durable/key-gate/verdict";
import { DomainError } from "../../lib/errors";
import type { AppEnv } from "../env";

/** The spec's three-segment names, emitted in lowercase as its Limits section says. */
export const RATE_LIMIT_HEADERS = {
  limit: "x-rate-limit-limit",
  remaining: "x-rate-limit-remaining",
  reset: "x-rate-limit-reset",
} as const;

function setRateHeaders(c: Context<AppEnv>, rate: RateDecision) {
  c.header(RATE_LIMIT_HEADERS.limit, String(rate.limit));
  c.header(RATE_LIMIT_HEADERS.remaining, String(rate.remaining));
  c.header(RATE_LIMIT_HEADERS.reset, String(rate.reset));
}

/**
 * Applies the rate decision for `endpoint`: its headers go on every response from here
 * on, errors included, and a spent budget is 429 `rate_limit_exceeded`.
 */
export function applyRate(c: Context<AppEnv>, endpoint: EndpointName, rate: RateDecision | undefined): RateDecision {
  if (!rate || typeof rate.limit !== "number" || typeof rate.remaining !== "number") {
    throw new DomainError("rate_limit_misconfigured", { details: { endpoint } });
  }
  setRateHeaders(c, rate);
  if (rate.retryAfter !== undefined) {
    const agency = rate.scope === "agency";
    throw new DomainError("rate_limit_exceeded", {
      message:
        `The ${agency ? "agency's shared " : ""}budget of ${rate.limit} requests per 60 s for ${endpoint} ` +
        `is exhausted${agency ? " by all its keys together" : ""}; retry after ${rate.retryAfter} s.`,
      details: { endpoint, limit: rate.limit, window_seconds: 60, ...(agency ? { reason: "agency_budget" } : {}) },
      retryAfter: rate.retryAfter,
    });
  }
  return rate;
}
