import type { Context } from "hono";
import { isUniqueViolation } from "../../domain/constraint";
import type { Caller } from "../../domain/roles";
import type { Begin, CachedResponse, Lease } from "../../durable/idempotency-ledger";
import { DomainError } from "../../lib/errors";
import { bucketOf, sha256Hex } from "../../lib/ids";
import { IDEMPOTENCY_SHARDS } from "../../lib/limits";
import { log } from "../../lib/telemetry/log";
import { outboundTraceparent } from "../../lib/telemetry/trace";
import { unavailableRetryAfter } from "../../lib/transient";
import type { AppEnv, IdempotencyContext } from "../env";
import { type IdempotencyOutcome, type RequestEvent, timed } from "../wide-event";
import { readBodyText } from "../wire";
import { afterResponse } from "./after-response";
import { answerFromMark, findMark } from "./idempotency-mark";
import { recordOf, replay, seal, unseal } from "./idempotency-replay";

const IDEMPOTENCY_HEADER = "X-Idempotency-Key";
const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;

/**
 * Whose an idempotency record is: the agency's, so that any of its keys repeating the
 * request gets the replay, as the spec keys it; or, for an answer carrying a secret, one
 * caller's alone (`caller`), so that no other caller of the agency can replay it.
 */
export interface RecordOwner {
  agencyId: string;
  caller?: string;
}

/** A caller as a record owner names it: the API key (the same across its rotations), or a session's user. */
export const callerIdentity = (caller: Pick<Caller, "keyId" | "userId">) =>
  caller.keyId ? `key:${caller.keyId}` : `user:${caller.userId}`;

/**
 * The ledger object holding an agency's idempotency key: one of IDEMPOTENCY_SHARDS per
 * agency, picked by a stable hash of the key. The shard is the name's last part and
 * never holds a colon, so two agencies never share an object.
 */
export const ledgerName = (agencyId: string, key: string) => `${agencyId}:${bucketOf(key, IDEMPOTENCY_SHARDS)}`;

/**
 * A request as the record remembers it: its owner (`agency`, or one caller), method, path,
 * precondition (If-Match, when sent) and body. The same key with another request, or from
 * a caller that does not own the record, is a conflict: a retry that corrects its If-Match
 * is a new request, never the replay of the first one's 412.
 */
export const requestHashOf = (owner: string, method: string, path: string, body: string, ifMatch?: string) =>
  sha256Hex(`${owner}\n${method} ${path}\n${ifMatch === undefined ? "" : `if-match: ${ifMatch.trim()}\n`}${body}`);

async function contextOf(c: Context<AppEnv>, owner: RecordOwner, key: string, limit?: number) {
  const body = await readBodyText(c, limit);
  const ifMatch = c.req.header("if-match");
  const requestHash = await requestHashOf(owner.caller ?? "agency", c.req.method, c.req.path, body, ifMatch);
  return { agencyId: owner.agencyId, idempotencyKey: key, requestHash } satisfies IdempotencyContext;
}

/** The request's idempotency key: 400 when missing or not 1–128 visible ASCII characters. */
function idempotencyKeyOf(c: Context<AppEnv>): string {
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined || key === "") throw new DomainError("idempotency.missing");
  if (!IDEMPOTENCY_KEY_PATTERN.test(key))
    throw new DomainError("idempotency_key_invalid", { details: { max_length: 128, received_length: key.length } });
  return key;
}

type LedgerStub = ReturnType<Env["IDEMPOTENCY"]["getByName"]>;
const ledgerOf = (env: Env, idem: IdempotencyContext): LedgerStub =>
  env.IDEMPOTENCY.getByName(ledgerName(idem.agencyId, idem.idempotencyKey));

/** Asks the ledger for the request's idempotency key, the call timed in the request's wide event. */
async function begin(ledger: LedgerStub, idem: IdempotencyContext, event: RequestEvent | undefined): Promise<Begin> {
  const begun = ledger.begin(idem.agencyId, idem.idempotencyKey, idem.requestHash, undefined, outboundTraceparent());
  return (await timed(event, "ledgerMs", begun as Promise<unknown>)) as Begin;
}

interface Claimed {
  idem: IdempotencyContext;
  begin: Begin;
  ledger: LedgerStub;
}

/**
 * A ledger claim started before the caller is confirmed, on the caller this isolate last
 * saw confirmed. `hold` takes it over when it was made for exactly its request; any claim
 * not taken over is undone, so a request that is refused leaves the key as it found it:
 * no lease, no cached answer.
 */
export class EarlyClaim {
  #open = true;
  readonly #claimed: Promise<Claimed | undefined>;

  private constructor(c: Context<AppEnv>, owner: RecordOwner, key: string, limit: number) {
    const env = c.env;
    const event = c.var.event;
    this.#claimed = (async () => {
      const idem = await contextOf(c, owner, key, limit);
      const ledger = ledgerOf(env, idem);
      return { idem, ledger, begin: await begin(ledger, idem, event) };
    })().catch(() => undefined); // `hold` then claims as it would have.
  }

  /** Starts a claim when the request names a well-formed idempotency key. */
  static start(c: Context<AppEnv>, owner: RecordOwner, limit: number): EarlyClaim | undefined {
    const key = c.req.header(IDEMPOTENCY_HEADER);
    if (key === undefined || !IDEMPOTENCY_KEY_PATTERN.test(key)) return undefined;
    return new EarlyClaim(c, owner, key, limit);
  }

  /** The ledger's answer, when the claim was made for `idem`; any other claim is undone. */
  async take(idem: IdempotencyContext): Promise<Begin | undefined> {
    if (!this.#open) return undefined;
    this.#open = false;
    const claimed = await this.#claimed;
    if (!claimed) return undefined;
    const { agencyId, idempotencyKey, requestHash } = claimed.idem;
    if (agencyId === idem.agencyId && idempotencyKey === idem.idempotencyKey && requestHash === idem.requestHash)
      return claimed.begin;
    await undo(claimed);
    return undefined;
  }

  /** Undoes the claim unless it was taken over. */
  async drop(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    const claimed = await this.#claimed;
    if (claimed) await undo(claimed);
  }
}

/**
 * Gives back a lease nobody used: a key the claim took first is forgotten, one an earlier
 * attempt had taken is only freed, as that attempt left it.
 */
async function undo({ idem, begin, ledger }: Claimed): Promise<void> {
  if (begin.state !== "acquired") return;
  const lease: Lease = { agencyId: idem.agencyId, idempotencyKey: idem.idempotencyKey, token: begin.token };
  try {
    await (begin.recovering ? ledger.release(lease) : ledger.discard(lease));
  } catch (err) {
    // The lease then lapses by itself when it expires.
    log.warn("idempotency lease not undone", { agency_id: idem.agencyId, error: String(err) });
  }
}

/** The lease a request holds on its idempotency key while its handler runs. */
export interface Hold {
  idem: IdempotencyContext;
  ledger: LedgerStub;
  lease: Lease;
}

/**
 * Takes the request's idempotency key in the key's ledger (the early claim, when it was
 * made for this very request): a replay answers at once, another request with the key
 * is 409, one still running is 409 with `Retry-After`. A request that committed but lost
 * its response is answered from its commit mark. A change and its commit mark are
 * written in one D1 batch, so a request that committed is never executed twice.
 */
export async function hold(
  c: Context<AppEnv>,
  owner: RecordOwner,
  early: EarlyClaim | undefined,
): Promise<Hold | Response> {
  const idem = await contextOf(c, owner, idempotencyKeyOf(c));
  const ledger = ledgerOf(c.env, idem);
  const begun =
    (await early?.take(idem)) ??
    (await begin(ledger, idem, c.var.event).catch((err: unknown) => {
      throw new DomainError("idempotency_unavailable", { retryAfter: unavailableRetryAfter(err) });
    }));
  noteOutcome(c, begun.state === "acquired" ? "new" : begun.state);
  if (begun.state === "replay") return replay(c, await unseal(c.env, idem, begun.response));
  if (begun.state === "conflict") throw new DomainError("idempotency_key_conflict");
  if (begun.state === "in_progress") throw new DomainError("idempotency_key_in_progress", { retryAfter: 5 });
  if (begun.state === "full")
    throw new DomainError("agency_quota_exceeded", {
      message:
        "The agency's answers kept for replay (24 hours) have reached their bound; nothing was done. " +
        "Retry once older answers expire, or send smaller writes.",
      details: { resource: "idempotency_answer_bytes", limit: begun.limit, usage: begun.used },
    });
  const held: Hold = {
    idem,
    ledger,
    lease: { agencyId: idem.agencyId, idempotencyKey: idem.idempotencyKey, token: begun.token },
  };
  if (!begun.recovering) return held;
  return (await answerCommitted(c, held)) ?? held;
}

/**
 * The answer of the request that committed under the held key, rebuilt from its commit
 * mark and cached for later replays; undefined when no request committed. A failure to
 * read the mark gives the key back.
 */
async function answerCommitted(c: Context<AppEnv>, held: Hold): Promise<Response | undefined> {
  const mark = await findMark(c.var.db, held.idem).catch(async (err: unknown) => {
    await held.ledger.discard(held.lease);
    throw err;
  });
  if (!mark) return undefined;
  const answer = await answerFromMark(c, mark);
  await complete(c, held, await seal(c.env, held.idem, answer));
  noteOutcome(c, "replay");
  return replay(c, answer);
}

/**
 * Settles the hold once the handler has answered `c.res`: a 5xx frees the key for a
 * retry, any other answer is recorded for exact replays. A concurrent duplicate that
 * committed first made this batch fail on the mark's key: the request is then answered
 * like the one that committed, and is no failure.
 */
export async function settle(c: Context<AppEnv>, held: Hold): Promise<void> {
  if (c.error && isUniqueViolation(c.error, "idempotency_marks")) {
    // No failure if a committed answer is found; a failed look-up throws an error of its own.
    const failure = c.error;
    c.error = undefined;
    const committed = await answerCommitted(c, held);
    if (committed) {
      c.res = committed;
      return;
    }
    c.error = failure;
  }
  if (c.res.status >= 500) {
    await held.ledger.release(held.lease);
    return;
  }
  const sealed = await seal(c.env, held.idem, await recordOf(c));
  // The answer is sent to the ledger before the response leaves, but not waited for: the
  // change and its commit mark are already in D1, so the answer no longer depends on it. A
  // duplicate reaching the ledger first waits for it there; were the call lost, the lease
  // lapses and the duplicate is answered from the commit mark.
  const cached = held.ledger.complete(held.lease, sealed, outboundTraceparent()).catch((err: unknown) => {
    log.warn("idempotency answer not cached", { agency_id: held.idem.agencyId, error: String(err) });
  });
  afterResponse(c, cached);
}

/** Caches the answer in the ledger, the call timed in the request's wide event. */
const complete = (c: Context<AppEnv>, held: Hold, response: CachedResponse) =>
  timed(c.var.event, "ledgerMs", held.ledger.complete(held.lease, response, outboundTraceparent()));

function noteOutcome(c: Context<AppEnv>, outcome: IdempotencyOutcome): void {
  const event = c.var.event;
  if (event) event.idempotency = outcome;
}

/** Frees the key when the handler failed past the error handler (nothing was answered). */
export const release = (held: Hold): Promise<void> => held.ledger.release(held.lease);
