import type { Context } from "hono";
import { DomainError } from "../../lib/errors";
import { RecentMisses } from "../../lib/recent-misses";
import type { AppEnv } from "../env";
import { RATE_LIMIT_HEADERS } from "./rate-limit";

/** Failed authentications a client address may make per 60 s (per Cloudflare location, as the binding counts). */
export const AUTH_FAILURE_LIMIT = 60;
const WINDOW_SECONDS = 60;

/** Addresses that spent their failures, held back by this isolate until the window has passed. */
const heldBack = new RecentMisses(10_000, WINDOW_SECONDS * 1000);

/** Forgets the held-back addresses, as a fresh isolate would start (for tests). */
export function forgetHeldBack(): void {
  heldBack.clear();
}

/**
 * What failures are counted against: the client's address as Cloudflare's edge reports it,
 * and for IPv6 its /64 (a host is given a whole /64 and can pick any address in it, so
 * counting single addresses would let it rotate past the limit). A request without an
 * address did not come through the edge (a local call, a test): it is not throttled.
 */
const addressOf = (c: Context<AppEnv>): string | undefined => {
  const address = c.req.header("cf-connecting-ip")?.trim();
  return address ? throttleKeyOf(address) : undefined;
};

/** An IPv4 address as it is; an IPv6 address as its /64 (`2001:db8:0:1::/64`); an IPv4-mapped one as its IPv4. */
export function throttleKeyOf(address: string): string {
  if (!address.includes(":")) return address;
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped) return mapped[1]!;
  const [head = "", tail] = address.toLowerCase().split("%")[0]!.split("::");
  const front = head ? head.split(":") : [];
  const back = tail ? tail.split(":") : [];
  const groups =
    tail === undefined ? front : [...front, ...Array(Math.max(0, 8 - front.length - back.length)).fill("0"), ...back];
  const prefix = groups.slice(0, 4).map((g) => (Number.parseInt(g, 16) || 0).toString(16));
  while (prefix.length < 4) prefix.push("0");
  return `${prefix.join(":")}::/64`;
}

/** Whether this isolate holds back the request's client address (see `holdBackAddress`). */
export function isHeldBack(c: Context<AppEnv>): boolean {
  const address = addressOf(c);
  return address !== undefined && heldBack.has(address);
}

/**
 * Refuses, before any D1 lookup, a request from an address that failed authentication
 * more than AUTH_FAILURE_LIMIT times in the window: 429 `rate_limit_exceeded` with its
 * `Retry-After`. Called only where authentication would query D1 (a secret this isolate
 * does not know, a session cookie), so a key already confirmed here keeps working.
 */
export function holdBackAddress(c: Context<AppEnv>): void {
  const address = addressOf(c);
  if (address === undefined || !heldBack.has(address)) return;
  c.header(RATE_LIMIT_HEADERS.limit, String(AUTH_FAILURE_LIMIT));
  c.header(RATE_LIMIT_HEADERS.remaining, "0");
  c.header(RATE_LIMIT_HEADERS.reset, String(Math.ceil(Date.now() / 1000) + WINDOW_SECONDS));
  throw new DomainError("rate_limit_exceeded", {
    message:
      `This address failed authentication more than ${AUTH_FAILURE_LIMIT} times in ${WINDOW_SECONDS} s; ` +
      `retry after ${WINDOW_SECONDS} s with a valid key.`,
    details: { reason: "authentication_failures", limit: AUTH_FAILURE_LIMIT, window_seconds: WINDOW_SECONDS },
    retryAfter: WINDOW_SECONDS,
  });
}

/**
 * A refusal that cost a D1 lookup: an unknown key, a session cookie that names no live
 * session, a forged upload URL.
 */
function failedLookup(err: unknown): boolean {
  if (!(err instanceof DomainError)) return false;
  return (
    err.code === "api_key_invalid" ||
    err.code === "upload_url_invalid" ||
    (err.code === "auth_required" && err.details?.reason === "session_invalid")
  );
}

/**
 * A route whose only credential is its signed URL (`expires` and `sig` in the query: the
 * Worker's own upload and part URLs). Like a key, it is held back per client address after
 * too many failures, before any D1 lookup, unless `vouches` verifies its signature from the
 * request alone; a URL without a well-formed `expires` and `sig` is refused before D1 too,
 * and every refused URL is counted against the address.
 */
export function signedUrlRoute<C extends Context<AppEnv>>(
  handler: (c: C) => Promise<Response>,
  vouches: (c: C) => Promise<boolean>,
) {
  return async (c: C): Promise<Response> => {
    // A URL whose signature verifies from the request alone (its type and size as sent) is never held back.
    const address = addressOf(c);
    if (address !== undefined && heldBack.has(address) && !(await vouches(c))) holdBackAddress(c);
    try {
      const expires = c.req.query("expires");
      if (!c.req.query("sig") || !expires || !/^\d{1,12}$/.test(expires)) throw new DomainError("upload_url_invalid");
      return await handler(c);
    } catch (err) {
      await countAuthFailure(c, err);
      throw err;
    }
  };
}

/**
 * Counts a failed authentication against the client's address in the rate-limiting
 * binding; an address over the limit is held back by this isolate from then on. The
 * binding failing lets the request's own answer stand (it never turns a 401 into a 5xx).
 */
export async function countAuthFailure(c: Context<AppEnv>, err: unknown): Promise<void> {
  const address = addressOf(c);
  if (address === undefined || !failedLookup(err)) return;
  try {
    const { success } = await c.env.AUTH_FAILURES.limit({ key: address });
    if (!success) heldBack.add(address);
  } catch {
    // Without the binding's answer the address is not held back; the 401 stands.
  }
}
