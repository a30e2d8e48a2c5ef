import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import type { EndpointName } from "../../domain/budgets";
import type { Caller } from "../../domain/roles";
import type { RateDecision } from "../../durable/key-gate/gate";
import { DomainError } from "../../lib/errors";
import { type D1Session, openSession, sessionConstraint } from "../d1-session";
import type { Admission, AppEnv } from "../env";
import { timed } from "../wide-event";
import { readBody } from "../wire";
import { countAuthFailure, holdBackAddress } from "./auth-throttle";
import { authorize, type Permission } from "./authorize";
import { countConditionalRead, ifNoneMatch, settleConditionalRead } from "./conditional";
import { callerIdentity, EarlyClaim, type Hold, hold, type RecordOwner, release, settle } from "./idempotency-hold";
import { askGate, countAtGate, handOffBookmark, hashOfKey, isKnownKey, knownCaller, sameCaller } from "./key-auth";
import { applyRate } from "./rate-limit";
import { callerFromSession, SESSION_COOKIE, sessionRate } from "./session-auth";

/** What a public route asks of the admission step, resolved by the route factory. */
export interface AdmissionPolicy extends Permission {
  /** Also accept the dashboard session cookie; the cookie wins when both are sent. */
  session?: boolean;
  /** The route's rate-limit budget: counted by the key's gate in the same round trip. */
  endpoint?: EndpointName;
  /** A read answering an ETag: with If-None-Match, counted only when it is not answered 304. */
  conditionalRead?: boolean;
  /** The largest body the route accepts, read through this cap before anything uses it. */
  bodyLimit: number;
  /** A mutating route: it takes an idempotency key and is answered once per key. */
  idempotent: boolean;
  /** Its answer carries a secret: replayed only to the caller that made the first request. */
  replaysToCallerOnly?: boolean;
}

/** Who a request is, before the route's own checks: a key (with its gate's answer) or a session. */
interface Identified {
  caller: Caller;
  rate?: RateDecision;
  /** A key's request: the secret's hash and where its reads start. */
  key?: { hash: string; bookmark?: string };
}

const READS = new Set(["GET", "HEAD"]);

/**
 * The one step that decides whether and how a guarded request runs, in the spec's order:
 * authentication (key or session), the rate window, scope and role, the body through the
 * route's cap, the idempotency key. What it decides is one `Admission` on
 * `c.var.admission`; the handler then runs on the key's D1 session, and the step's
 * response half records the answer for replays and hands the write's bookmark to the
 * key's gate.
 *
 * For a key this isolate has seen confirmed, an idempotent write claims its key in the
 * ledger while the gate decides; the claim is kept only when the gate confirms the same
 * caller and every check passes, so a refused request leaves no claim behind.
 */
export function admission(policy: AdmissionPolicy): MiddlewareHandler<AppEnv> {
  return async function admission(c, next) {
    c.set("bodyLimit", policy.bodyLimit);
    const read = READS.has(c.req.method);
    // A conditional read by key: authenticated now, counted once its answer is known not to be 304.
    const tags = policy.conditionalRead && policy.endpoint && read ? ifNoneMatch(c) : undefined;
    let early: EarlyClaim | undefined;
    let held: Hold | undefined;
    let identified: Identified;
    let count: (() => Promise<void>) | undefined;
    try {
      const cookie = policy.session ? getCookie(c, SESSION_COOKIE) : undefined;
      try {
        if (cookie) {
          holdBackAddress(c);
          identified = await bySession(c, policy, cookie);
        } else {
          const hash = await hashOfKey(c.env, secretOf(c, policy));
          if (!isKnownKey(hash)) holdBackAddress(c);
          const last = policy.idempotent && !read ? knownCaller(hash) : undefined;
          early = last && EarlyClaim.start(c, ownerOf(last.caller, policy), policy.bodyLimit);
          const answer = await timed(c.var.event, "gateMs", askGate(c.env, hash, policy.endpoint ?? null, !tags));
          // Work started on another caller than the one confirmed is not kept.
          if (last && !sameCaller(last.caller, answer.caller)) await early?.drop();
          identified = { caller: answer.caller, rate: answer.rate, key: { hash, bookmark: answer.bookmark } };
        }
      } catch (err) {
        await countAuthFailure(c, err);
        throw err;
      }
      const { caller, rate } = identified;
      noteCaller(c, caller, rate);
      if (policy.endpoint) applyRate(c, policy.endpoint, rate);
      count = tags && policy.endpoint && identified.key ? uncounted(c, caller, policy.endpoint) : undefined;
      try {
        authorize(caller, policy);
        await readBody(c, policy.bodyLimit);
      } catch (err) {
        // A conditional read refused here is not a 304: it is counted like any refused read.
        if (count) await count();
        throw err;
      }
      if (policy.idempotent) {
        const taken = await hold(c, ownerOf(caller, policy), early);
        if (taken instanceof Response) return taken;
        held = taken;
      }
    } finally {
      // A claim not taken over (a refusal, another caller) is undone before the answer.
      await early?.drop();
    }
    const admitted: Admission = { caller: identified.caller, rate: identified.rate, idempotency: held?.idem };
    c.set("admission", admitted);
    c.set("caller", admitted.caller);
    const key = identified.key;
    if (!key) return respond(c, next, held);
    const session = openSession(c.env.DB, sessionConstraint(read, key.bookmark), c.var.event);
    let handed: Promise<void> | undefined;
    const handOff = () =>
      (handed ??= timed(c.var.event, "gateMs", handOffBookmark(c.env, key.hash, session.bookmark())));
    await inSession(c, session, () => respond(c, next, held, handOff));
    if (!read) await handOff();
    if (tags && count) await settleConditionalRead(c, tags, count);
  };
}

/** Counts a conditional read of a key that the gate admitted without counting, once. */
function uncounted(c: Context<AppEnv>, caller: Caller, endpoint: EndpointName): (() => Promise<void>) | undefined {
  const keyId = caller.keyId;
  if (!keyId) return undefined;
  return () =>
    countConditionalRead(c, endpoint, () => timed(c.var.event, "gateMs", countAtGate(c.env, keyId, endpoint)));
}

/** Who the request is and what is left of its window, for its wide event (key ids only). */
function noteCaller(c: Context<AppEnv>, caller: Caller, rate: RateDecision | undefined): void {
  const event = c.var.event;
  if (!event) return;
  event.agencyId = caller.agencyId;
  event.keyId = caller.keyId ?? undefined;
  event.rateRemaining = rate?.remaining;
}

/**
 * Whose idempotency record the request makes: the agency's, as the spec keys it (any key
 * of the agency gets the replay), or the caller's alone where the answer carries a secret.
 */
const ownerOf = (caller: Caller, policy: AdmissionPolicy): RecordOwner => ({
  agencyId: caller.agencyId,
  caller: policy.replaysToCallerOnly ? callerIdentity(caller) : undefined,
});

/** The presented API key; 401 when there is none (or it came as a bearer token). */
function secretOf(c: Context<AppEnv>, policy: AdmissionPolicy): string {
  const secret = c.req.header("x-api-key");
  if (secret !== undefined && secret !== "") return secret;
  if (/^bearer\s/i.test(c.req.header("authorization") ?? "")) throw new DomainError("api_key_header_mismatch");
  throw new DomainError(policy.session ? "auth_required" : "api_key_missing");
}

/** A dashboard session's caller, counted in its user's own window where the route has a budget. */
async function bySession(c: Context<AppEnv>, policy: AdmissionPolicy, cookie: string): Promise<Identified> {
  const caller = await callerFromSession(c.env.DB, cookie);
  return { caller, rate: policy.endpoint ? await sessionRate(c.env, caller, policy.endpoint) : undefined };
}

/** Runs the handler on the key's D1 session: `c.var.db` (and `DB`, for code taking `Env`) is the session. */
async function inSession(c: Context<AppEnv>, session: D1Session, run: () => Promise<void>): Promise<void> {
  const plain = c.env;
  const plainDb = c.var.db;
  c.env = { ...plain, DB: session.binding };
  c.set("db", session.db);
  try {
    await run();
  } finally {
    c.env = plain;
    c.set("db", plainDb);
  }
}

/** Runs the handler, then settles the idempotency hold on its answer. */
async function respond(
  c: Context<AppEnv>,
  next: () => Promise<void>,
  held: Hold | undefined,
  alongside: () => Promise<void> = async () => undefined,
): Promise<void> {
  if (!held) return next();
  try {
    await next();
  } catch (err) {
    await release(held);
    throw err;
  }
  await settle(c, held, alongside);
}
