import { and, eq, gt } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Context, MiddlewareHandler } from "hono";
import { type Db, database } from "../db/client";
import { type IdempotencyMark, idempotencyMarks } from "../db/schema";
import { isUniqueViolation } from "../domain/constraint";
import type { Begin, CachedResponse } from "../durable/idempotency-lock";
import { DomainError } from "../lib/errors";
import { nowIso, sha256Hex } from "../lib/ids";
import { IDEMPOTENCY_TTL_MS } from "../lib/limits";
import type { AppEnv, IdempotencyContext } from "./env";
import { readBodyText } from "./wire";

export const IDEMPOTENCY_HEADER = "X-Idempotency-Key";
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;
export { IDEMPOTENCY_TTL_MS };

const REPLAYED_HEADERS = new Set(["content-type", "location", "retry-after"]);

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

async function findMark(c: Context<AppEnv>, idem: IdempotencyContext) {
  return database(c.env.DB)
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
}

/**
 * Every mutating request names its idempotency key (GET, HEAD and OPTIONS never reach
 * this). The key's lock object answers replays, conflicts and requests still running;
 * a change and its commit mark are written in one D1 batch, so a request that committed
 * is never executed twice, even when its response was lost.
 */
export function idempotency(): MiddlewareHandler<AppEnv> {
  return async function idempotency(c, next) {
    const key = c.req.header(IDEMPOTENCY_HEADER);
    if (key === undefined || key === "") throw new DomainError("idempotency.missing");
    if (!IDEMPOTENCY_KEY_PATTERN.test(key))
      throw new DomainError("idempotency_key_invalid", { details: { max_length: 128, received_length: key.length } });
    const agencyId = c.get("caller").agencyId;
    const body = await readBodyText(c);
    const idem: IdempotencyContext = {
      agencyId,
      key,
      requestHash: await sha256Hex(`${c.req.method} ${c.req.path}\n${body}`),
    };
    const lock = c.env.IDEMPOTENCY.getByName(`${agencyId}:${key}`);

    let begin: Begin;
    try {
      begin = (await lock.begin(agencyId, key, idem.requestHash)) as Begin;
    } catch {
      throw new DomainError("idempotency_unavailable", { retryAfter: 5 });
    }
    if (begin.state === "replay") return replay(begin.response);
    if (begin.state === "conflict") throw new DomainError("idempotency_key_conflict");
    if (begin.state === "in_progress") throw new DomainError("idempotency_key_in_progress", { retryAfter: 5 });
    const token = begin.token;

    if (begin.recovering) {
      const mark = await findMark(c, idem);
      if (mark) {
        const answer = await answerFromMark(c, mark);
        await lock.complete(token, answer);
        return replay(answer);
      }
    }

    c.set("idempotency", idem);
    try {
      await next();
    } catch (err) {
      await lock.release(token);
      throw err;
    }
    // A concurrent duplicate that committed first makes this batch fail on the mark's key.
    if (c.error && isUniqueViolation(c.error, "idempotency_marks")) {
      const mark = await findMark(c, idem);
      if (mark) {
        const answer = await answerFromMark(c, mark);
        await lock.complete(token, answer);
        // Recovered: the duplicate is answered like the request that committed, and is no failure.
        c.set("unexpected", undefined);
        c.res = replay(answer);
        return;
      }
    }
    if (c.res.status >= 500) {
      await lock.release(token);
      return;
    }
    const res = c.res.clone();
    // Headers that describe this request (request id, rate limit) are answered afresh on a replay.
    const headers: [string, string][] = [...res.headers].filter(([name]) => REPLAYED_HEADERS.has(name.toLowerCase()));
    await lock.complete(token, { status: res.status, headers, body: await res.text() });
  };
}

/**
 * The commit mark of the current idempotent request, to be appended to the handler's
 * `db.batch` so the change and its mark commit together (or not at all). Empty when the
 * request carries no idempotency context.
 */
export function idempotencyMark(
  c: Context<AppEnv>,
  db: Db,
  result: { status: number; resourceType?: string; resourceId?: string },
): BatchItem<"sqlite">[] {
  const idem = c.get("idempotency");
  if (!idem) return [];
  return [
    db.insert(idempotencyMarks).values({
      agencyId: idem.agencyId,
      idemKey: idem.key,
      requestHash: idem.requestHash,
      status: result.status,
      resourceType: result.resourceType ?? null,
      resourceId: result.resourceId ?? null,
      expiresAt: nowIso(Date.now() + IDEMPOTENCY_TTL_MS),
    }),
  ];
}
