import { and, eq, gt } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Context } from "hono";
import type { Db } from "../../db/client";
import { insertIfChanged } from "../../db/insert-if-changed";
import { type IdempotencyMark, idempotencyMarks } from "../../db/schema";
import type { CachedResponse } from "../../durable/idempotency-ledger";
import { DomainError } from "../../lib/errors";
import { nowIso } from "../../lib/ids";
import { IDEMPOTENCY_TTL_MS } from "../../lib/limits";
import { formatTraceparent } from "../../lib/telemetry/trace";
import type { AppEnv, IdempotencyContext } from "../env";

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
  const idem = c.var.admission?.idempotency;
  if (!idem) return [];
  const row: IdempotencyMark = {
    agencyId: idem.agencyId,
    idemKey: idem.idempotencyKey,
    requestHash: idem.requestHash,
    status: result.status,
    resourceType: result.resourceType ?? null,
    resourceId: result.resourceId ?? null,
    expiresAt: nowIso(Date.now() + IDEMPOTENCY_TTL_MS),
    createdAt: nowIso(),
    requestId: c.var.requestId ?? null,
    operationId: c.var.event?.route ?? null,
    method: c.req.method,
    path: new URL(c.req.url).pathname,
    traceParent: c.var.event ? formatTraceparent(c.var.event.trace) : null,
  };
  return [result.ifChanged ? insertIfChanged(db, idempotencyMarks, row) : db.insert(idempotencyMarks).values(row)];
}

/** The request's commit mark, if it committed; a mark of another request (or caller) is a conflict. */
export async function findMark(db: Db, idem: IdempotencyContext): Promise<IdempotencyMark | undefined> {
  const mark = await db
    .select()
    .from(idempotencyMarks)
    .where(
      and(
        eq(idempotencyMarks.agencyId, idem.agencyId),
        eq(idempotencyMarks.idemKey, idem.idempotencyKey),
        gt(idempotencyMarks.expiresAt, nowIso()),
      ),
    )
    .get();
  if (mark && mark.requestHash !== idem.requestHash) throw new DomainError("idempotency_key_conflict");
  return mark;
}

/**
 * The answer of a request that committed but whose response was lost: the resource it
 * marked, presented as it stands by its type's replayer.
 */
export async function answerFromMark(c: Context<AppEnv>, mark: IdempotencyMark): Promise<CachedResponse> {
  const replayer = mark.resourceType ? c.var.routes.replayer(mark.resourceType) : undefined;
  const request = { db: c.var.db, env: c.env, agencyId: mark.agencyId, origin: new URL(c.req.url).origin };
  const body = replayer && mark.resourceId ? await replayer(request, mark.resourceId) : undefined;
  const json = body ?? { resource_type: mark.resourceType, resource_id: mark.resourceId };
  return {
    status: mark.status,
    headers: [["content-type", "application/json"]],
    body: mark.status === 204 ? "" : JSON.stringify(json),
  };
}
