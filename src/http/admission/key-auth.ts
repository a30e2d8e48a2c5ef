import { findSecret, type ShardName } from "../../db/shards";
import type { EndpointName } from "../../domain/budgets";
import { checkKeyFormat, hashSecret, type KeyMode } from "../../domain/keys";
import type { Caller, Role, Scope } from "../../domain/roles";
import type { GateVerdict, RateDecision } from "../../durable/key-gate/verdict";
import { DomainError } from "../../lib/errors";
import { RecentMisses } from "../../lib/recent-misses";
import { log } from "../../lib/telemetry/log";
import { currentTrace, outboundTraceparent } from "../../lib/telemetry/trace";
import { unavailableRetryAfter } from "../../lib/transient";

/** What the key's gate confirmed for a request: the caller, its rate decision and where its reads start. */
export interface GateAnswer {
  caller: Caller;
  rate?: RateDecision;
  /** The D1 bookmark of the key's latest committed write. */
  bookmark?: string;
  /** The shard that holds the key's agency, as its gate keeps it. */
  shard: ShardName;
  /** A write of the key is not reported yet: reads go to the primary. */
  primary?: boolean;
  /** A write's ticket, closed by its bookmark hand-off. */
  ticket?: string;
}

/** The caller this isolate last saw the gate confirm for a secret, and that key's latest bookmark. */
export type KnownCaller = Pick<GateAnswer, "caller" | "bookmark">;

/**
 * A secret's hash maps to its key id forever (secrets are never reassigned), so the
 * mapping is kept per isolate. So is the caller the key's gate last confirmed, with its
 * bookmark: work may start on it, but every answer waits for the gate's own verdict.
 */
const keyIdByHash = new Map<string, { keyId: string; shard: ShardName }>();
const confirmed = new Map<string, KnownCaller>();
const KEY_CACHE_LIMIT = 10_000;
/**
 * Secrets no key has, remembered for a minute: a client repeating a wrong or random key
 * costs one D1 query a minute per isolate, not one per request. A secret is random and
 * never reused, so a miss can only turn into a hit by a key minted with that very secret.
 */
const unknownHashes = new RecentMisses(KEY_CACHE_LIMIT, 60_000);

/** Forgets what this isolate learned of keys, as a fresh isolate would start (for tests). */
export function forgetKeys(): void {
  keyIdByHash.clear();
  confirmed.clear();
  handOffs.clear();
  unknownHashes.clear();
}

/** The presented secret's hash, once its shape and mode are checked (401 before any lookup). */
export function hashOfKey(env: Env, secret: string): Promise<string> {
  checkKeyFormat(secret, env.API_MODE as KeyMode);
  return hashSecret(secret);
}

/** True when this isolate already knows which key the secret belongs to (no D1 lookup needed). */
export const isKnownKey = (hash: string): boolean => keyIdByHash.has(hash);

/** The caller the gate last confirmed for this secret on this isolate, if any. */
export const knownCaller = (hash: string): KnownCaller | undefined => confirmed.get(hash);

/** The key of a secret and its agency's shard, as the control database finds them (one query per isolate). */
async function keyFor(env: Env, hash: string): Promise<{ keyId: string; shard: ShardName } | undefined> {
  const cached = keyIdByHash.get(hash);
  if (cached) return cached;
  if (unknownHashes.has(hash)) return undefined;
  const found = await findSecret(env, hash);
  if (!found) {
    unknownHashes.add(hash);
    return undefined;
  }
  if (keyIdByHash.size >= KEY_CACHE_LIMIT) keyIdByHash.clear();
  keyIdByHash.set(hash, found);
  return found;
}

/**
 * Authenticates the key and counts the request in its gate, in one round trip; what the
 * gate confirms is remembered for this isolate's next requests of the key.
 */
export async function askGate(
  env: Env,
  hash: string,
  endpoint: EndpointName | null,
  counted = true,
  writing = false,
): Promise<GateAnswer> {
  try {
    const answer = await askGateOnce(env, hash, endpoint, counted, writing);
    if (confirmed.size >= KEY_CACHE_LIMIT) confirmed.clear();
    confirmed.set(hash, { caller: answer.caller, bookmark: answer.bookmark });
    return answer;
  } catch (err) {
    confirmed.delete(hash);
    throw err;
  }
}

async function askGateOnce(
  env: Env,
  hash: string,
  endpoint: EndpointName | null,
  counted: boolean,
  writing: boolean,
): Promise<GateAnswer> {
  const found = await keyFor(env, hash);
  if (!found) throw new DomainError("api_key_invalid");
  const { keyId } = found;
  let answer: unknown;
  try {
    answer = await env.KEY_GATE.getByName(keyId).admit(
      keyId,
      hash,
      env.API_MODE as KeyMode,
      endpoint,
      undefined,
      outboundTraceparent(),
      counted,
      found.shard,
      writing,
    );
  } catch (err) {
    throw new DomainError("rate_limit_unavailable", { retryAfter: unavailableRetryAfter(err) });
  }
  // Fail closed on an answer that is not a verdict.
  if (!answer || typeof answer !== "object" || typeof (answer as { ok?: unknown }).ok !== "boolean") {
    throw new DomainError("rate_limit_unavailable", { retryAfter: 5 });
  }
  const verdict = answer as GateVerdict;
  if (!verdict.ok) throw new DomainError(verdict.code, { message: verdict.message, details: verdict.details });
  const { key, rate, bookmark, shard, primary, ticket } = verdict;
  return {
    caller: {
      via: "api_key",
      agencyId: key.agencyId,
      role: key.role as Role,
      scopes: new Set(key.scopes as Scope[]),
      userId: key.mintedByUserId,
      keyId: key.id,
    },
    rate,
    bookmark: typeof bookmark === "string" ? bookmark : undefined,
    shard,
    primary: primary === true,
    ticket: typeof ticket === "string" ? ticket : undefined,
  };
}

/**
 * Counts a request the gate authenticated without counting (a conditional read that is
 * not answered 304) in the key's window; a gate that cannot answer is 503, as on admission.
 */
export async function countAtGate(env: Env, keyId: string, endpoint: EndpointName): Promise<RateDecision | undefined> {
  let rate: unknown;
  try {
    rate = await env.KEY_GATE.getByName(keyId).count(keyId, endpoint, undefined, outboundTraceparent());
  } catch (err) {
    throw new DomainError("rate_limit_unavailable", { retryAfter: unavailableRetryAfter(err) });
  }
  return rate && typeof rate === "object" ? (rate as RateDecision) : undefined;
}

/**
 * A key's bookmark hand-offs from this isolate: the newest bookmark its writes reported,
 * the newest the key's gate has acknowledged, the write tickets not sent yet, those whose
 * call has ended, and the call under way. Concurrent writes of one key share calls: each
 * waits for a call that carries its bookmark (or a newer one) and its ticket, so a burst of
 * writes makes about one call per round trip instead of one per write. The writes are of
 * different requests, whose awaits may resume in any order: each reads where its own
 * bookmark and ticket stand from this state, never from the order the calls ended in.
 */
interface KeyHandOffs {
  newest?: string;
  acknowledged?: string;
  tickets: Set<string>;
  ended: Set<string>;
  call?: Promise<{ sent?: string; ok: boolean }>;
}
const handOffs = new Map<string, KeyHandOffs>();

/**
 * Hands a write's bookmark to the key's gate (the truth for every isolate) and keeps it
 * here too, closing the write's ticket; resolves once the gate holds this bookmark or a
 * newer one and has closed the ticket, or a call carrying them failed. Until then the
 * gate sends the key's reads to the primary, so the write's answer need not wait for this.
 */
export async function handOffBookmark(env: Env, hash: string, bookmark: string | null, ticket?: string): Promise<void> {
  const known = confirmed.get(hash);
  const keyId = known?.caller.keyId ?? keyIdByHash.get(hash)?.keyId;
  if ((!bookmark && !ticket) || !keyId) return;
  if (bookmark && known && (known.bookmark === undefined || bookmark > known.bookmark)) {
    confirmed.set(hash, { ...known, bookmark });
  }
  let key = handOffs.get(keyId);
  if (!key) {
    if (handOffs.size >= KEY_CACHE_LIMIT) handOffs.clear();
    key = { tickets: new Set(), ended: new Set() };
    handOffs.set(keyId, key);
  }
  if (bookmark && (key.newest === undefined || bookmark > key.newest)) key.newest = bookmark;
  if (ticket) key.tickets.add(ticket);
  const state = key;
  const reported = () => !bookmark || (state.acknowledged !== undefined && state.acknowledged >= bookmark);
  // Each turn sees both reported, ends on a failed call that carried them, or starts a call
  // carrying the newest bookmark and every ticket not sent, which include them: at most two
  // calls, and a third turn would mean that state no longer says so; the gate's window ends it.
  let closed = !ticket;
  for (let turn = 0; turn < MAX_HAND_OFF_TURNS; turn++) {
    if (ticket && state.ended.delete(ticket)) closed = true;
    if (closed && reported()) return;
    const { sent, ok } = await (state.call ?? startCall(env, keyId, state));
    if (ok) continue;
    // A failed call that carried what this write still waited for ends the wait: it is not retried.
    if (ticket && state.ended.delete(ticket)) closed = true;
    if (closed && (reported() || (sent !== undefined && sent >= bookmark!))) return;
  }
}

/** Turns of one write's hand-off: two calls, each awaited once, and the check after them. */
const MAX_HAND_OFF_TURNS = 3;

/**
 * Starts the key's next call and keeps it as the call under way until it ends. It is cleared
 * only after it is stored, even when the call fails before its first await.
 */
function startCall(env: Env, keyId: string, key: KeyHandOffs): Promise<{ sent?: string; ok: boolean }> {
  const call = sendBookmark(env, keyId, key).finally(() => {
    if (key.call === call) key.call = undefined;
  });
  key.call = call;
  return call;
}

/** One hand-off call: the newest bookmark and the tickets not sent yet; its tickets end with it, carried or lost. */
async function sendBookmark(env: Env, keyId: string, key: KeyHandOffs): Promise<{ sent?: string; ok: boolean }> {
  const sent = key.newest;
  const tickets = [...key.tickets];
  key.tickets.clear();
  let ok = true;
  try {
    await env.KEY_GATE.getByName(keyId).wrote(sent ?? null, outboundTraceparent(), tickets);
    if (sent !== undefined && (key.acknowledged === undefined || sent > key.acknowledged)) key.acknowledged = sent;
  } catch (err) {
    // The writes have committed; their tickets lapse in the gate, which meanwhile sends reads to the primary.
    log.warn("bookmark hand-off failed", { key_id: keyId, trace_id: currentTrace()?.traceId, error: String(err) });
    ok = false;
  }
  if (key.ended.size >= KEY_CACHE_LIMIT) key.ended.clear();
  for (const ticket of tickets) key.ended.add(ticket);
  return { sent, ok };
}

/** The same authority: agency, key, user, role and scopes. */
export function sameCaller(a: Caller, b: Caller): boolean {
  return (
    a.agencyId === b.agencyId &&
    a.keyId === b.keyId &&
    a.role === b.role &&
    a.userId === b.userId &&
    a.scopes.size === b.scopes.size &&
    [...a.scopes].every((scope) => b.scopes.has(scope))
  );
}
