import type { Context, MiddlewareHandler } from "hono";
import type { BatchItem } from "drizzle-orm/batch";
import type { AppEnv } from "../env";
import type { Db } from "../db/client";
import { idempotencyMarks } from "../db/schema";
import { ApiError } from "../lib/errors";
import { nowIso } from "../lib/ids";

export const IDEMPOTENCY_HEADER = "X-Idempotency-Key";
export const IDEMPOTENCY_KEY_PATTERN = /^[\x21-\x7e]{1,128}$/;
export const IDEMPOTENCY_TTL_MS = 24 * 60 * 60 * 1000;

/** What the idempotency guard puts on `c.var.idempotency` for the handler. */
export interface IdempotencyContext {
  agencyId: string;
  key: string;
  /** SHA-256 of method, path and body: the same key with another request is a conflict. */
  requestHash: string;
}

/** Every mutating request names its idempotency key; GET, HEAD and OPTIONS never reach this. */
export function idempotency(): MiddlewareHandler<AppEnv> {
  return async function idempotency(c, next) {
    const key = c.req.header(IDEMPOTENCY_HEADER);
    if (key === undefined || key === "") throw new ApiError("idempotency.missing");
    if (!IDEMPOTENCY_KEY_PATTERN.test(key)) throw new ApiError("idempotency_key_invalid", { details: { max_length: 128, received_length: key.length } });
    await next();
  };
}

/**
 * The commit mark of the current idempotent request, to be appended to the handler's
 * `db.batch` so the change and its mark commit together (or not at all). Undefined when
 * the request carries no idempotency context.
 */
export function idempotencyMark(
  c: Context<AppEnv>,
  db: Db,
  result: { status: number; resourceType?: string; resourceId?: string },
): BatchItem<"sqlite"> | undefined {
  const idem = c.get("idempotency");
  if (!idem) return undefined;
  return db.insert(idempotencyMarks).values({
    agencyId: idem.agencyId,
    idemKey: idem.key,
    requestHash: idem.requestHash,
    status: result.status,
    resourceType: result.resourceType ?? null,
    resourceId: result.resourceId ?? null,
    expiresAt: nowIso(Date.now() + IDEMPOTENCY_TTL_MS),
  });
}
