import type { ErrorCode } from "../lib/errors";
import { log } from "../lib/telemetry/log";
import { isSampled, type Trace } from "../lib/telemetry/trace";
import { recordRequest } from "../lib/telemetry/usage";

/** How the idempotency ledger answered a mutating request. */
export type IdempotencyOutcome = "new" | "replay" | "conflict" | "in_progress" | "full";

/**
 * What one request did, gathered on `c.var.event` while it runs and written once when it
 * ends (`writeWideEvent`): each step fills in its own fields, with no await of its own.
 */
export interface RequestEvent {
  readonly started: number;
  readonly trace: Trace;
  /** The operation id, once a route matched. */
  route?: string;
  agencyId?: string;
  keyId?: string;
  errorCode?: ErrorCode;
  idempotency?: IdempotencyOutcome;
  rateRemaining?: number;
  bodyBytes?: number;
  /** Milliseconds spent waiting on the key's gate, the idempotency ledger and D1. */
  gateMs: number;
  ledgerMs: number;
  d1Ms: number;
}

export const newRequestEvent = (trace: Trace): RequestEvent => ({
  started: Date.now(),
  trace,
  gateMs: 0,
  ledgerMs: 0,
  d1Ms: 0,
});

type Timer = "gateMs" | "ledgerMs" | "d1Ms";

/** `work` as it was, with the time until it settles added to the event's `field` (no event: untimed). */
export function timed<T>(event: RequestEvent | undefined, field: Timer, work: Promise<T>): Promise<T> {
  if (!event) return work;
  const start = Date.now();
  return work.finally(() => {
    event[field] += Date.now() - start;
  });
}

interface Ending {
  requestId: string;
  method: string;
  status: number;
  env: Pick<Env, "ENVIRONMENT" | "API_MODE" | "USAGE" | "WIDE_EVENT_SAMPLE_RATE"> | undefined;
}

/** A request at least this slow always writes its wide event, whatever the sample rate. */
export const SLOW_REQUEST_MS = 1_000;

/**
 * The share of ordinary successful reads whose wide event is written when
 * `WIDE_EVENT_SAMPLE_RATE` is not set: one in twenty. Reads are most of the traffic and
 * their line most of what telemetry costs them; every read keeps its data point, and every
 * write, refusal, failure, slow request and sampled trace keeps its line whatever the rate.
 */
export const DEFAULT_READ_SAMPLE_RATE = 0.05;

/**
 * The share of ordinary reads whose wide event is written: `WIDE_EVENT_SAMPLE_RATE`, a
 * number from 0 to 1; unset, empty or anything else is DEFAULT_READ_SAMPLE_RATE.
 */
function sampleRate(setting: string | undefined): number {
  if (setting === undefined || setting.trim() === "") return DEFAULT_READ_SAMPLE_RATE;
  const rate = Number(setting);
  return rate >= 0 && rate <= 1 ? rate : DEFAULT_READ_SAMPLE_RATE;
}

const READ_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Whether a request's wide event is written. A write (any method but GET, HEAD and
 * OPTIONS), a refused or failed request (status 400 and up), a slow one and one whose
 * caller marked its trace as sampled always are; an ordinary read with the probability of
 * the sample rate.
 */
export function keepsWideEvent(
  request: { method: string; status: number; latencyMs: number; trace: Trace },
  setting: string | undefined,
  draw: () => number = Math.random,
): boolean {
  const { method, status, latencyMs, trace } = request;
  if (!READ_METHODS.has(method.toUpperCase())) return true;
  if (status >= 400 || latencyMs >= SLOW_REQUEST_MS || isSampled(trace)) return true;
  const rate = sampleRate(setting);
  return rate >= 1 || (rate > 0 && draw() < rate);
}

/**
 * The request's one wide event, through the one logger, and its usage data point. Key
 * ids only, never a secret; the path is not logged, the operation id names the route.
 * Every request writes its data point; its line is kept as `keepsWideEvent` says.
 */
export function writeWideEvent(event: RequestEvent, end: Ending): void {
  const latencyMs = Date.now() - event.started;
  const environment = end.env?.ENVIRONMENT ?? "unknown";
  const request = { method: end.method, status: end.status, latencyMs, trace: event.trace };
  if (keepsWideEvent(request, end.env?.WIDE_EVENT_SAMPLE_RATE))
    log.info("request", {
      request_id: end.requestId,
      trace_id: event.trace.traceId,
      environment,
      route: event.route ?? null,
      method: end.method,
      status: end.status,
      error_code: event.errorCode ?? null,
      agency_id: event.agencyId ?? null,
      key_id: event.keyId ?? null,
      mode: end.env?.API_MODE ?? null,
      latency_ms: latencyMs,
      gate_ms: event.gateMs,
      ledger_ms: event.ledgerMs,
      d1_ms: event.d1Ms,
      idempotency: event.idempotency ?? null,
      rate_remaining: event.rateRemaining ?? null,
      body_bytes: event.bodyBytes ?? 0,
    });
  recordRequest(end.env?.USAGE, {
    agencyId: event.agencyId ?? null,
    keyId: event.keyId ?? null,
    operation: event.route ?? null,
    status: end.status,
    errorCode: event.errorCode ?? null,
    environment,
    latencyMs,
    bodyBytes: event.bodyBytes ?? 0,
  });
}
