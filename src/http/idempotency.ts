import { and, eq, getTableColumns, gt, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Context, MiddlewareHandler } from "hono";
import { type Db, database } from "../db/client";
import { type IdempotencyMark, idempotencyMarks } from "../db/schema";
import { isUniqueViolation } from "../domain/constraint";
import type { Caller } from "../domain/roles";
import type { Begin, CachedResponse, Lease } from "../durable/idempotency-ledger";
import { decrypt, encrypt, rowBinding } from "../lib/crypto";
import { DomainError } from "../lib/errors";
import { bucketOf, nowIso, sha256Hex } from "../lib/ids";
import { IDEMPOTENCY_SHARDS, IDEMPOTENCY_TTL_MS } from "../lib/limits";
import { unavailableRetryAfter } from "../lib/transient";
import type { AppEnv, IdempotencyContext } from "./env";
import { readBodyText } from "./wire";

export const IDEMPOTENCY_HEADER = "X-Idempotency-Key";
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;
export { IDEMPOTENCY_TTL_MS };

const REPLAYED_HEADERS = new Set(["content-type", "location", "retry-after"]);
const RESPONSE_PURPOSE = "idempotency-response";

/**
 * Whose an idempotency record is: the API key (the same across its rotations), or the
 * dashboard user of a session. Another caller of the same agency never shares it.
 */
export const callerIdentity = (caller: Pick<Caller, "keyId" | "userId">) =>
  caller.keyId ? `key:${caller.keyId}` : `user:${caller.userId}`;

/**
 * The ledger object holding an agency's idempotency key: one of IDEMPOTENCY_SHARDS per
 * agency, picked by a stable hash of the key. The shard is the name's last part and
 * never holds a colon, so two agencies never share an object.
 */
export const ledgerName = (agencyId: string, key: string) => `${agencyId}:${bucketOf(key, IDEMPOTENCY_SHARDS)}`;

/** A request as the record remembers it: its caller, method, path and body. */
export const requestHashOf = (callerId: string, method: string, path: string, body: string) =>
  sha256Hex(`${callerId}\n${method} ${path}\n${body}`);

/** The request's idempotency context: its agency, key, and the hash of caller, method, path and body. */
export async function idempotencyOf(
  c: Context<AppEnv>,
  caller: Pick<Caller, "agencyId" | "keyId" | "userId">,
  key: string,
  limit?: number,
): Promise<IdempotencyContext> {
  const body = await readBodyText(c, limit);
  const requestHash = await requestHashOf(callerIdentity(caller), c.req.method, c.req.path, body);
  return { agencyId: caller.agencyId, key, requestHash };
}

type LedgerStub = ReturnType<Env["IDEMPOTENCY"]["getByName"]>;
const ledgerOf = (env: Env, idem: IdempotencyContext): LedgerStub =>
  env.IDEMPOTENCY.getByName(ledgerName(idem.agencyId, idem.key));

interface Claimed {
  idem: IdempotencyContext;
  begin: Begin;
  ledger: LedgerStub;
}

/**
 * A ledger claim started while the key's gate decides, on the caller this isolate last
 * saw confirmed (see `authenticate`). The idempotency guard takes it over when it was
 * made for exactly its request; any claim not taken over is undone, so a request that
 * is refused leaves the key as it found it: no lease, no cached answer.
 */
export class EarlyClaim {
  #open = true;
  readonly #claimed: Promise<Claimed | undefined>;

  constructor(c: Context<AppEnv>, caller: Pick<Caller, "agencyId" | "keyId" | "userId">, key: string, limit: number) {
    const env = c.env;
    this.#claimed = (async () => {
      const idem = await idempotencyOf(c, caller, key, limit);
      const ledger = ledgerOf(env, idem);
      return { idem, ledger, begin: (await ledger.begin(idem.agencyId, key, idem.requestHash)) as Begin };
    })().catch(() => undefined); // The guard then claims as it would have.
  }

  /** The ledger's answer, when the claim was made for `idem`; any other claim is undone. */
  async take(idem: IdempotencyContext): Promise<Begin | undefined> {
    if (!this.#open) return undefined;
    this.#open = false;
    const claimed = await this.#claimed;
    if (!claimed) return undefined;
    const { agencyId, key, requestHash } = claimed.idem;
    if (agencyId === idem.agencyId && key === idem.key && requestHash === idem.requestHash) return claimed.begin;
    await undo(claimed);
    return undefined;
  }

  /** Undoes the claim unless the guard took it over. */
  async drop(): Promise<void> {
    if (!this.#open) return;
    this.#open = false;
    const claimed = await this.#claimed;
    if (claimed) await undo(claimed);
  }
}

/** Starts an early claim when the request names a well-formed idempotency key. */
export function claimEarly(
  c: Context<AppEnv>,
  caller: Pick<Caller, "agencyId" | "keyId" | "userId">,
  limit: number,
): EarlyClaim | undefined {
  const key = c.req.header(IDEMPOTENCY_HEADER);
  if (key === undefined || !IDEMPOTENCY_KEY_PATTERN.test(key)) return undefined;
  return new EarlyClaim(c, caller, key, limit);
}

/**
 * Gives back a lease nobody used: a key the claim took first is forgotten, one an earlier
 * attempt had taken is only freed, as that attempt left it.
 */
async function undo({ idem, begin, ledger }: Claimed): Promise<void> {
  if (begin.state !== "acquired") return;
  const lease: Lease = { agencyId: idem.agencyId, key: idem.key, token: begin.token };
  try {
    await (begin.recovering ? ledger.release(lease) : ledger.discard(lease));
  } catch (err) {
    // The lease then lapses by itself when it expires.
    console.error(JSON.stringify({ level: "warn", agency_id: idem.agencyId, error: String(err) }));
  }
}

/**
 * Cached bodies (which may carry a secret shown once, such as a webhook signing secret)
 * are kept sealed, bound to the agency, the idempotency key and the request, caller included.
 */
const responseBinding = (idem: IdempotencyContext) =>
  rowBinding("idempotency", idem.agencyId, idem.key, idem.requestHash);

async function seal(env: Env, idem: IdempotencyContext, response: CachedResponse): Promise<CachedResponse> {
  return { ...response, body: await encrypt(env.SECRET_KEY, RESPONSE_PURPOSE, response.body, responseBinding(idem)) };
}

async function unseal(env: Env, idem: IdempotencyContext, response: CachedResponse): Promise<CachedResponse> {
  return { ...response, body: await decrypt(env.SECRET_KEY, RESPONSE_PURPOSE, response.body, responseBinding(idem)) };
}

function replay(response: CachedResponse): Response {
  const headers = new Headers(response.headers);
  headers.set("X-Idempotent-Replay", "true");
  return new Response(response.status === 204 ? null : response.body, { status: response.status, headers });
}

async function answerFromMark(c: Context<AppEnv>, mark: IdempotencyMark): Promise<CachedResponse> {
  const replayer = mark.resourceType ? c.var.routes.replayer(mark.resourceType) : undefined;
  const request = { db: database(c.env.DB), env: c.env, agencyId: mark.agencyId, origin: new URL(c.req.url).origin };
  const body = replayer && mark.resourceId ? await replayer(request, mark.resourceId) : undefined;
  const json = body ?? { resource_type: mark.resourceType, resource_id: mark.resourceId };
  return {
    status: mark.status,
    headers: [["content-type", "application/json"]],
    body: mark.status === 204 ? "" : JSON.stringify(json),
  };
}

/** The request's commit mark, if it committed; a mark of another request (or caller) is a conflict. */
async function findMark(c: Context<AppEnv>, idem: IdempotencyContext) {
  const mark = await database(c.env.DB)
    .select()
    .from(idempotencyMarks)
    .where(
      and(
        eq(idempotencyMarks.agencyId, idem.agencyId),
        eq(idempotencyMarks.idemKey, idem.key),
        gt(idempotencyMarks.expiresAt, nowIso()),
      ),
    )
    .get();
  if (mark && mark.requestHash !== idem.requestHash) throw new DomainError("idempotency_key_conflict");
  return mark;
}

/**
 * Every mutating request names its idempotency key (GET, HEAD and OPTIONS never reach
 * this). The key's ledger object answers replays, conflicts and requests still running;
 * a change and its commit mark are written in one D1 batch, so a request that committed
 * is never executed twice, even when its response was lost. A record belongs to the
 * caller that made the first request: only that caller gets the replay, any other
 * caller of the agency reusing the key gets `idempotency_key_conflict`.
 */
export function idempotency(): MiddlewareHandler<AppEnv> {
  return async function idempotency(c, next) {
    const key = c.req.header(IDEMPOTENCY_HEADER);
    if (key === undefined || key === "") throw new DomainError("idempotency.missing");
    if (!IDEMPOTENCY_KEY_PATTERN.test(key))
      throw new DomainError("idempotency_key_invalid", { details: { max_length: 128, received_length: key.length } });
    const idem = await idempotencyOf(c, c.get("caller"), key);
    const agencyId = idem.agencyId;
    const ledger = ledgerOf(c.env, idem);

    let begin = await c.get("claim")?.take(idem);
    if (!begin) {
      try {
        begin = (await ledger.begin(agencyId, key, idem.requestHash)) as Begin;
      } catch (err) {
        throw new DomainError("idempotency_unavailable", { retryAfter: unavailableRetryAfter(err) });
      }
    }
    if (begin.state === "replay") return replay(await unseal(c.env, idem, begin.response));
    if (begin.state === "conflict") throw new DomainError("idempotency_key_conflict");
    if (begin.state === "in_progress") throw new DomainError("idempotency_key_in_progress", { retryAfter: 5 });
    const lease: Lease = { agencyId, key, token: begin.token };

    if (begin.recovering) {
      const mark = await findMark(c, idem).catch(async (err: unknown) => {
        await ledger.discard(lease);
        throw err;
      });
      if (mark) {
        const answer = await answerFromMark(c, mark);
        await ledger.complete(lease, await seal(c.env, idem, answer));
        return replay(answer);
      }
    }

    c.set("idempotency", idem);
    try {
      await next();
    } catch (err) {
      await ledger.release(lease);
      throw err;
    }
    // A concurrent duplicate that committed first makes this batch fail on the mark's key.
    if (c.error && isUniqueViolation(c.error, "idempotency_marks")) {
      const mark = await findMark(c, idem).catch(async (err: unknown) => {
        await ledger.discard(lease);
        c.set("unexpected", undefined);
        throw err;
      });
      if (mark) {
        const answer = await answerFromMark(c, mark);
        await ledger.complete(lease, await seal(c.env, idem, answer));
        // Recovered: the duplicate is answered like the request that committed, and is no failure.
        c.set("unexpected", undefined);
        c.res = replay(answer);
        return;
      }
    }
    if (c.res.status >= 500) {
      await ledger.release(lease);
      return;
    }
    // The change has committed: its bookmark goes to the key's gate while the ledger records the answer.
    void c.get("handOffBookmark")?.();
    const res = c.res.clone();
    // Headers that describe this request (request id, rate limit) are answered afresh on a replay.
    const headers: [string, string][] = [...res.headers].filter(([name]) => REPLAYED_HEADERS.has(name.toLowerCase()));
    await ledger.complete(lease, await seal(c.env, idem, { status: res.status, headers, body: await res.text() }));
  };
}

/**
 * The commit mark of the current idempotent request, to be appended to the handler's
 * `db.batch` so the change and its mark commit together (or not at all). Empty when the
 * request carries no idempotency context.
 *
 * With `ifChanged`, the mark is written only when the statement just before it in the
 * batch changed a row: placed right after a guarded UPDATE (or the event that follows
 * it the same way), a change that lost its race commits no mark, so the mark never
 * claims a success the request did not have.
 */
export function idempotencyMark(
  c: Context<AppEnv>,
  db: Db,
  result: { status: number; resourceType?: string; resourceId?: string; ifChanged?: boolean },
): BatchItem<"sqlite">[] {
  const idem = c.get("idempotency");
  if (!idem) return [];
  const row: IdempotencyMark = {
    agencyId: idem.agencyId,
    idemKey: idem.key,
    requestHash: idem.requestHash,
    status: result.status,
    resourceType: result.resourceType ?? null,
    resourceId: result.resourceId ?? null,
    expiresAt: nowIso(Date.now() + IDEMPOTENCY_TTL_MS),
    createdAt: nowIso(),
  };
  if (!result.ifChanged) return [db.insert(idempotencyMarks).values(row)];
  // INSERT … SELECT lists every column of the table, in table order.
  const selected = sql.join(
    Object.keys(getTableColumns(idempotencyMarks)).map((name) => sql`${row[name as keyof IdempotencyMark]}`),
    sql`, `,
  );
  return [db.insert(idempotencyMarks).select(sql`SELECT ${selected} WHERE changes() > 0`)];
}
