import type { Context } from "hono";
import type { EndpointName } from "../../domain/budgets";
import { type IfVersion, ifVersionOf } from "../../domain/versions";
import type { RateDecision } from "../../durable/key-gate/verdict";
import { DomainError } from "../../lib/errors";
import { type EntityTags, etagOf, parseEntityTags, versionsOf, weaklyMatches } from "../../lib/etag";
import type { AppEnv } from "../env";
import { applyRate } from "./rate-limit";

/** Answers the resource's strong ETag, built from its version. */
export function setEtag(c: Context<AppEnv>, version: number): void {
  c.header("ETag", etagOf(version));
}

/**
 * The versions a write's If-Match accepts: undefined without the header or with `*` (any
 * existing version), the versions of its `"v<n>"` tags otherwise (other tags match none).
 * A value that is not `*` or a list of quoted entity tags is 400 `if_match_malformed`.
 */
export function ifMatch(c: Context<AppEnv>): IfVersion {
  const value = c.req.header("if-match");
  if (value === undefined) return undefined;
  const tags = parseEntityTags(value);
  if (!tags) throw new DomainError("if_match_malformed", { details: { if_match: value.slice(0, 200) } });
  return tags === "*" ? undefined : ifVersionOf(versionsOf(tags), tags);
}

/**
 * The entity tags of a read's If-None-Match. A value that is not `*` or a list of entity
 * tags is ignored, as if it were not sent: the read is answered (and counted) in full.
 */
export function ifNoneMatch(c: Context<AppEnv>): EntityTags | undefined {
  const value = c.req.header("if-none-match");
  return value === undefined ? undefined : parseEntityTags(value);
}

/**
 * Ends a conditional read that the gate admitted without counting. A 200 whose ETag
 * matches If-None-Match (weak comparison) becomes 304 with no body: it keeps the ETag,
 * X-Request-Id and the rate headers of the uncounted window, and costs nothing. Any
 * other answer is counted now; a spent budget turns it into the 429 an unconditional
 * read would have had.
 */
export async function settleConditionalRead(
  c: Context<AppEnv>,
  tags: EntityTags,
  count: () => Promise<void>,
): Promise<void> {
  const etag = c.res.headers.get("etag");
  if (c.res.status === 200 && etag && weaklyMatches(tags, etag)) {
    c.res = new Response(null, { status: 304 });
    c.res.headers.delete("content-type");
    c.res.headers.delete("content-length");
    return;
  }
  await count();
}

/**
 * The 304 of a conditional read whose If-None-Match matched the resource's current version
 * before the handler ran: no body, the ETag, and the rate headers of the uncounted window.
 */
export function notModified(c: Context<AppEnv>, version: number): Response {
  c.header("ETag", etagOf(version));
  return c.body(null, 304);
}

/**
 * Counts a conditional read whose answer is not 304 (a refusal before the handler too),
 * and applies the decision: its rate headers, and 429 when the budget is spent.
 */
export async function countConditionalRead(
  c: Context<AppEnv>,
  endpoint: EndpointName,
  count: () => Promise<RateDecision | undefined>,
): Promise<void> {
  const rate = await count();
  if (c.var.event) c.var.event.rateRemaining = rate?.remaining;
  try {
    applyRate(c, endpoint, rate);
  } catch (err) {
    c.header("ETag", undefined);
    throw err;
  }
}
