import type { Context } from "hono";
import { HTTPException } from "hono/http-exception";
import { quotaRefusal, refusedResource } from "../domain/quotas";
import { sandboxHelper, sandboxSentence } from "../lib/error-guide";
import { DomainError, type ErrorCode, statusOf } from "../lib/errors";
import { newId } from "../lib/ids";
import { log } from "../lib/telemetry/log";
import { transientFailure } from "../lib/transient";
import type { AppEnv } from "./env";
import { ERROR_DOCS_PATH } from "./openapi/errors";

/** A failure that only the HTTP layer knows of, with headers of its own (`Allow` on a 405). */
export class HttpError extends DomainError {
  readonly headers: Record<string, string>;

  constructor(
    code: ErrorCode,
    opts: { message?: string; details?: Record<string, unknown>; headers?: Record<string, string> } = {},
  ) {
    super(code, opts);
    this.name = "HttpError";
    this.headers = opts.headers ?? {};
  }
}

interface ErrorEnvelope {
  error: { code: ErrorCode; message: string; request_id: string; details: Record<string, unknown>; doc_url: string };
}

function envelope(err: DomainError, requestId: string, origin: string): ErrorEnvelope {
  const doc_url = `${origin}${ERROR_DOCS_PATH}#${encodeURIComponent(err.code)}`;
  return { error: { code: err.code, message: err.message, request_id: requestId, details: err.details, doc_url } };
}

/** The one error handler: the envelope for every failure, never a stack trace. */
export async function handleError(err: Error, c: Context<AppEnv>): Promise<Response> {
  return errorResponse(c, await quotaFigures(err, c));
}

/**
 * A write a quota trigger refused that its handler did not map (a derived row: an event or
 * a commit mark), as `agency_quota_exceeded` with the agency's limit and usage where the
 * caller's agency is known.
 */
async function quotaFigures(err: Error, c: Context<AppEnv>): Promise<DomainError> {
  const agencyId = c.var.caller?.agencyId;
  if (!(err instanceof DomainError) && agencyId && c.var.db && refusedResource(err)) {
    const refusal = await quotaRefusal(c.var.db, agencyId, err).catch((e: unknown) => e);
    if (refusal instanceof DomainError) return refusal;
  }
  return asDomainError(err, c);
}

function asDomainError(err: Error, c: Context<AppEnv>): DomainError {
  if (err instanceof DomainError) return err;
  if (err instanceof HTTPException && err.status === 400 && /JSON/i.test(err.message)) {
    return new DomainError("request_body_not_json", { details: { parse_error_position: null } });
  }
  if (err instanceof HTTPException && err.status === 413) return new DomainError("request_body_too_large");
  // The schema validator's own media-type check, stricter than the wire's about parameters.
  if (err instanceof HTTPException && err.status === 415) {
    const received = c.req.header("content-type") ?? null;
    return new DomainError("request_content_type_mismatch", {
      message: `The Content-Type '${received}' is not a JSON media type; send 'application/json'.`,
      details: { received, accepted: ["application/json"] },
    });
  }
  // A quota trigger refused a write no handler mapped (its agency's figures are then not read).
  const resource = refusedResource(err);
  if (resource) {
    return new DomainError("agency_quota_exceeded", {
      message: `The agency has reached its ${resource} quota; delete something or ask for a higher quota.`,
      details: { resource, limit: null, usage: null },
    });
  }
  // The agency's rows are switching shards (a move's fence): the write was refused whole.
  if (/\bagency_moving\b/.test(String(err.message))) return new DomainError("agency_moving", { retryAfter: 1 });
  const transient = transientFailure(err);
  if (transient) {
    log.warn("transient failure", {
      request_id: c.get("requestId"),
      trace_id: c.get("event")?.trace.traceId,
      path: c.req.path,
      error: String(err),
    });
    return new DomainError("service_unavailable", { retryAfter: transient.retryAfter });
  }
  unexpected.add(err);
  return new DomainError("internal_error");
}

/** Failures answered as `internal_error`: logged once when the request ends (see `requestId`). */
const unexpected = new WeakSet<Error>();

/**
 * Whether the request's failure (`c.error`) was unexpected. The admission step clears
 * `c.error` when it recovers from a failure (a duplicate that committed first), so a
 * recovered request logs nothing.
 */
export const unexpectedFailure = (c: Context<AppEnv>): Error | undefined =>
  c.error && unexpected.has(c.error) ? c.error : undefined;

/** The envelope of `err`, with the status its code has in the one table. */
export function errorResponse(c: Context<AppEnv>, err: DomainError): Response {
  const requestId = c.get("requestId") ?? newId("req");
  const event = c.get("event");
  if (event) event.errorCode = err.code;
  const body = envelope(err, requestId, new URL(c.req.url).origin);
  // In the sandbox, a step that waits on the dashboard names the test helper that takes it.
  const helper = c.env?.API_MODE === "test" ? sandboxHelper(err.code, err.details) : undefined;
  if (helper) {
    body.error.message = `${err.message} ${sandboxSentence(helper)}`;
    body.error.details = { ...err.details, test_helper: helper };
  }
  const res = c.json(body, statusOf(err.code));
  res.headers.set("X-Request-Id", requestId);
  if (err.retryAfter !== undefined) res.headers.set("Retry-After", String(err.retryAfter));
  if (err instanceof HttpError) for (const [k, v] of Object.entries(err.headers)) res.headers.set(k, v);
  return res;
}
