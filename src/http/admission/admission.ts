import type { Context, MiddlewareHandler } from "hono";
import { getCookie } from "hono/cookie";
import { database } from "../../db/client";
import { type ShardName, shardD1, shardEnv } from "../../db/shards";
import type { EndpointName } from "../../domain/budgets";
import { vouchesForKey } from "../../domain/keys";
import type { Caller } from "../../domain/roles";
import type { RateDecision } from "../../durable/key-gate/verdict";
import { keyringOf } from "../../lib/crypto/keyring";
import { DomainError } from "../../lib/errors";
import { etagOf, weaklyMatches } from "../../lib/etag";
import { type D1Session, openSession, sessionConstraint } from "../d1-session";
import type { Admission, AppEnv } from "../env";
import type { Guard } from "../registry";
import { timed } from "../wide-event";
import { readBody } from "../wire";
import { countAuthFailure, holdBackAddress, isHeldBack } from "./auth-throttle";
import { authorize, type Permission } from "./authorize";
import { countConditionalRead, ifNoneMatch, notModified, settleConditionalRead } from "./conditional";
import { callerIdentity, EarlyClaim, type Hold, hold, type RecordOwner, release, settle } from "./idempotency-claim";
import { askGate, countAtGate, hashOfKey, isKnownKey, knownCaller, sameCaller } from "./key-auth";
import { applyRate } from "./rate-limit";
import { callerFromSession, SESSION_COOKIE, sessionRate } from "./session-auth";
import { report, type Write } from "./write-report";

/** What a public route asks of the admission step, resolved by the route factory. */
export interface AdmissionPolicy extends Permission {
  /** Also accept the dashboard session cookie; the cookie wins when both are sent. */
  session?: boolean;
  /** The route's rate-limit budget: counted by the key's gate in the same round trip. */
  endpoint?: EndpointName;
  /** A read answering an ETag: with If-None-Match, counted only when it is not answered 304. */
  conditionalRead?: boolean;
  /** The version-only read a conditional read's If-None-Match is compared with, before its count and handler. */
  currentVersion?: Guard["currentVersion"];
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
  /** An API key's request: the secret's hash, where its reads start, and its agency's shard. */
  apiKey?: { hash: string; bookmark?: string; shard: ShardName; primary?: boolean };
  /** A session's request: the shard that holds its user's agency. */
  shard?: ShardName;
}

const READS = new Set(["GET", "HEAD"]);

/** What the steps before the handler decided: who calls, the key they hold, how to count a conditional read. */
interface Entry {
  identified: Identified;
  held?: Hold;
  count?: () => Promise<void>;
  /** A key's D1 session on its agency's shard, opened as soon as the key is known. */
  session?: D1Session;
}

/**
 * The one step that decides whether and how a guarded request runs, in the spec's order:
 * authentication (key or session), the rate window, scope and role, the body through the
 * route's cap, the idempotency key. What it decides is one `Admission` on
 * `c.var.admission`; a key's handler gets the key's D1 session as `c.var.db`, and the
 * step's response half records the answer for replays. A key's write reports its bookmark
 * to the key's gate however it ends, after its answer: until then, the gate sends the
 * key's reads to the primary.
 */
export function admission(policy: AdmissionPolicy): MiddlewareHandler<AppEnv> {
  return async function admission(c, next) {
    c.set("bodyLimit", policy.bodyLimit);
    const read = READS.has(c.req.method);
    if (read) return admit(c, next, policy, read);
    const write: Write = {};
    const started = Date.now();
    try {
      return await admit(c, next, policy, read, write);
    } finally {
      await report(c, write, started);
    }
  };
}

async function admit(
  c: Context<AppEnv>,
  next: () => Promise<void>,
  policy: AdmissionPolicy,
  read: boolean,
  write?: Write,
): Promise<Response | undefined> {
  // A conditional read by key naming versions: authenticated now, counted once its answer is known not
  // to be 304. `*` names no version: it is counted like any read, and answered 304 when the resource exists.
  const tags = policy.conditionalRead && policy.endpoint && read ? ifNoneMatch(c) : undefined;
  const versioned = tags !== undefined && tags !== "*" ? tags : undefined;
  const entry = await enter(c, policy, read, versioned !== undefined, write);
  if (entry instanceof Response) return entry;
  const { identified, held, count, session } = entry;
  const admitted: Admission = { caller: identified.caller, rate: identified.rate, idempotency: held?.idem };
  c.set("admission", admitted);
  c.set("caller", admitted.caller);
  if (versioned && count && policy.currentVersion && session) {
    // Compared with a version-only read: a match is 304 at no cost; anything else is counted (429 when the
    // window is spent) before the handler reads anything.
    const version = await policy.currentVersion(session.db, identified.caller.agencyId, (name) => c.req.param(name));
    if (version !== undefined && weaklyMatches(versioned, etagOf(version))) return notModified(c, version);
    await count();
    await respond(c, next, held);
    return;
  }
  await respond(c, next, held);
  if (tags === "*") await settleConditionalRead(c, tags, async () => undefined);
  else if (versioned && count) await settleConditionalRead(c, versioned, count);
}

/**
 * Every check before the handler, in order: who calls, the rate decision, scope and role,
 * the body, the idempotency key. A replay is answered here. For a key this isolate has
 * seen confirmed, an idempotent write claims its key in the ledger while the gate
 * decides; the claim is kept only when the gate confirms the same caller and every check
 * passes, so a refused request leaves no claim behind.
 */
async function enter(
  c: Context<AppEnv>,
  policy: AdmissionPolicy,
  read: boolean,
  conditional: boolean,
  write?: Write,
): Promise<Entry | Response> {
  let early: EarlyClaim | undefined;
  try {
    const identity = await identify(c, policy, read, conditional, write);
    early = identity.early;
    const { caller, rate, apiKey, shard } = identity.identified;
    noteCaller(c, caller, rate);
    // Every statement from here on (the commit mark of a recovered key too) runs on the agency's shard.
    const constraint = sessionConstraint(read && !apiKey?.primary, apiKey?.bookmark);
    const session = apiKey && openSession(shardD1(c.env, apiKey.shard), constraint, c.var.event);
    if (write) write.session = session;
    if (session && apiKey) {
      c.set("db", session.db);
      c.set("d1", session.binding);
      // What the request sends on (jobs, deliveries) names the shard; code taking `env` sees its database.
      c.env = shardEnv(c.env, apiKey.shard);
    } else if (shard) {
      const d1 = shardD1(c.env, shard);
      c.set("db", database(d1));
      c.set("d1", d1);
      c.env = shardEnv(c.env, shard);
    }
    if (policy.endpoint) applyRate(c, policy.endpoint, rate);
    const count =
      conditional && policy.endpoint && identity.identified.apiKey ? uncounted(c, caller, policy.endpoint) : undefined;
    await check(c, policy, caller, count);
    const held = policy.idempotent ? await hold(c, ownerOf(caller, policy), early) : undefined;
    if (held instanceof Response) return held;
    return { identified: identity.identified, held, count, session };
  } finally {
    // A claim not taken over (a refusal, another caller) is undone before the answer.
    await early?.drop();
  }
}

/** Who calls: the session cookie where the route takes one, else the API key; a failure is counted. */
async function identify(
  c: Context<AppEnv>,
  policy: AdmissionPolicy,
  read: boolean,
  conditional: boolean,
  write?: Write,
): Promise<{ identified: Identified; early?: EarlyClaim }> {
  try {
    const cookie = policy.session ? getCookie(c, SESSION_COOKIE) : undefined;
    if (!cookie) return await byKey(c, policy, read, conditional, write);
    holdBackAddress(c);
    return { identified: await bySession(c, policy, cookie) };
  } catch (err) {
    await countAuthFailure(c, err);
    throw err;
  }
}

/**
 * A key's caller, as its gate answers it; an early claim starts beside the gate's call. A
 * write's ticket is noted in `write` as soon as the gate answers, so it is reported however
 * the request ends.
 */
async function byKey(
  c: Context<AppEnv>,
  policy: AdmissionPolicy,
  read: boolean,
  conditional: boolean,
  write?: Write,
): Promise<{ identified: Identified; early?: EarlyClaim }> {
  const secret = secretOf(c, policy);
  const hash = await hashOfKey(c.env, secret);
  // A held-back address still gets through with a secret this Worker minted (its tag
  // verifies), so one bad client behind a shared address never locks out the others' keys.
  if (!isKnownKey(hash) && isHeldBack(c) && !(await vouchesForKey(keyringOf(c.env), secret))) holdBackAddress(c);
  const last = policy.idempotent && !read ? knownCaller(hash) : undefined;
  const early = last && EarlyClaim.start(c, ownerOf(last.caller, policy), policy.bodyLimit);
  try {
    const asked = askGate(c.env, hash, policy.endpoint ?? null, !conditional, write !== undefined);
    const answer = await timed(c.var.event, "gateMs", asked);
    if (write) Object.assign(write, { hash, ticket: answer.ticket });
    // Work started on another caller than the one confirmed is not kept.
    if (last && !sameCaller(last.caller, answer.caller)) await early?.drop();
    return {
      identified: {
        caller: answer.caller,
        rate: answer.rate,
        apiKey: { hash, bookmark: answer.bookmark, shard: answer.shard, primary: answer.primary },
      },
      early,
    };
  } catch (err) {
    await early?.drop();
    throw err;
  }
}

/** Scope and role, then the body through the route's cap. */
async function check(
  c: Context<AppEnv>,
  policy: AdmissionPolicy,
  caller: Caller,
  count: (() => Promise<void>) | undefined,
): Promise<void> {
  try {
    authorize(caller, policy);
    await readBody(c, policy.bodyLimit);
  } catch (err) {
    // A conditional read refused here is not a 304: it is counted like any refused read.
    if (count) await count();
    throw err;
  }
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
  const { caller, shard } = await callerFromSession(c.env, cookie);
  return { caller, shard, rate: policy.endpoint ? await sessionRate(c.env, caller, policy.endpoint) : undefined };
}

/** Runs the handler, then settles the idempotency hold on its answer. */
async function respond(c: Context<AppEnv>, next: () => Promise<void>, held: Hold | undefined): Promise<void> {
  if (!held) return next();
  try {
    await next();
  } catch (err) {
    await release(held);
    throw err;
  }
  await settle(c, held);
}
