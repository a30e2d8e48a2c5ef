import type { Context, MiddlewareHandler } from "hono";
import { newId } from "../lib/ids";
import { log } from "../lib/telemetry/log";
import { continueTrace, inTrace, untraced, withinSamplingBudget } from "../lib/telemetry/trace";
import type { AppEnv } from "./env";
import { unexpectedFailure } from "./errors";
import { newRequestEvent, writeWideEvent } from "./wide-event";

/** The response header naming the request's trace (the 32 hex digits of its `traceparent`). */
export const TRACE_ID_HEADER = "X-Trace-Id";

/**
 * Every response carries `X-Request-Id` (error envelopes repeat it as `error.request_id`)
 * and `X-Trace-Id`: the caller's W3C trace when it sent a valid `traceparent`, a new one
 * otherwise. The request runs inside its trace, so every hop it starts carries it. When
 * the request ends, its wide event is written once, with its usage data point; an
 * unexpected failure is logged here too. `OBSERVABILITY=off` (read once per request) skips
 * the trace, its header and hops, the wide event and the data point: what they cost.
 */
export function requestId(): MiddlewareHandler<AppEnv> {
  return async function requestId(c, next) {
    const id = newId("req");
    c.set("requestId", id);
    c.header("X-Request-Id", id);
    if (c.env?.OBSERVABILITY === "off") {
      await untraced(next);
      stamp(c, "X-Request-Id", id);
      logFailure(c, id, undefined);
      return;
    }
    const event = newRequestEvent(withinSamplingBudget(continueTrace(c.req.header("traceparent"))));
    c.set("event", event);
    c.header(TRACE_ID_HEADER, event.trace.traceId);
    await inTrace(event.trace, next);
    stamp(c, "X-Request-Id", id);
    stamp(c, TRACE_ID_HEADER, event.trace.traceId);
    logFailure(c, id, event.trace.traceId);
    // A body refused before it was read (a 429, a 401) counts at its declared length.
    event.bodyBytes ??= Number(c.req.header("content-length")) || 0;
    writeWideEvent(event, { requestId: id, method: c.req.method, status: c.res.status, env: c.env });
  };
}

/**
 * Makes sure the answer carries `name: value`. Set before the handler, a header is part of
 * every answer built through the context; an answer made some other way (a replay, a
 * fetched asset) gets it here. Setting a header on a finished answer copies the answer, so
 * it is done only when the header is missing or says something else.
 */
function stamp(c: Context<AppEnv>, name: string, value: string): void {
  if (c.res.headers.get(name) !== value) c.header(name, value);
}

/** The stack of a failure that reached no error envelope, in its own line. */
function logFailure(c: Context<AppEnv>, id: string, traceId: string | undefined): void {
  const err = unexpectedFailure(c);
  if (err)
    log.error("request failed", {
      request_id: id,
      trace_id: traceId ?? null,
      path: c.req.path,
      error: String(err),
      stack: err.stack,
    });
}
