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
): Promise<GateAnswer> {
  try {
    const answer = await askGateOnce(env, hash, endpoint, counted);
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
  const { key, rate, bookmark, shard } = verdict;
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
 * the newest the key's gate has acknowledged, and the call under way. Concurrent writes of
 * one key share calls: each waits for a call that carries its bookmark or a newer one, so
 * a burst of writes makes about one call per round trip instead of one per write.
 */
interface KeyHandOffs {
  newest: string;
  acknowledged?: string;
  call?: Promise<{ sent: string; ok: boolean }>;
}
const handOffs = new Map<string, KeyHandOffs>();

/**
 * Hands a write's bookmark to the key's gate (the truth for every isolate) and keeps it
 * here too; resolves once the gate holds this bookmark or a newer one, so that any read
 * the caller makes after the answer, on any isolate, starts at least there.
 */
export async function handOffBookmark(env: Env, hash: string, bookmark: string | null): Promise<void> {
  const known = confirmed.get(hash);
  const keyId = known?.caller.keyId ?? keyIdByHash.get(hash)?.keyId;
  if (!bookmark || !keyId) return;
  if (known && (known.bookmark === undefined || bookmark > known.bookmark)) {
    confirmed.set(hash, { ...known, bookmark });
  }
  let key = handOffs.get(keyId);
  if (!key) {
    if (handOffs.size >= KEY_CACHE_LIMIT) handOffs.clear();
    key = { newest: bookmark };
    handOffs.set(keyId, key);
  } else if (bookmark > key.newest) key.newest = bookmark;
  // Each turn either sees this bookmark acknowledged, ends on a failed call that carried
  // it, or starts a call carrying the newest bookmark, which includes it: at most two calls.
  while (key.acknowledged === undefined || key.acknowledged < bookmark) {
    const state = key;
    state.call ??= sendBookmark(env, keyId, state).finally(() => {
      state.call = undefined;
    });
    const { sent, ok } = await state.call;
    if (!ok && sent >= bookmark) return;
  }
}

async function sendBookmark(env: Env, keyId: string, key: KeyHandOffs): Promise<{ sent: string; ok: boolean }> {
  const sent = key.newest;
  try {
    await env.KEY_GATE.getByName(keyId).wrote(sent, outboundTraceparent());
  } catch (err) {
    // The writes have committed; a later read of another isolate may then start before them.
    log.warn("bookmark hand-off failed", { key_id: keyId, trace_id: currentTrace()?.traceId, error: String(err) });
    return { sent, ok: false };
  }
  if (key.acknowledged === undefined || sent > key.acknowledged) key.acknowledged = sent;
  return { sent, ok: true };
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
