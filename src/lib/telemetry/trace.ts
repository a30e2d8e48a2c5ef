import { AsyncLocalStorage } from "node:async_hooks";

/**
 * A W3C trace context (`traceparent`): the trace a request belongs to, this hop's span,
 * and the flags (bit 0: the caller asked for the trace to be recorded, "sampled").
 */
export interface Trace {
  traceId: string;
  spanId: string;
  flags: string;
}

const HEX = "0123456789abcdef";

function randomHex(bytes: number): string {
  const raw = crypto.getRandomValues(new Uint8Array(bytes));
  let out = "";
  for (const b of raw) out += HEX[b >> 4]! + HEX[b & 15]!;
  return out;
}

const ZEROS = /^0+$/;
/** version-traceid-parentid-flags, lowercase hex; a later version may append fields after a dash. */
const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/**
 * The caller's trace context, when `header` is a valid `traceparent`: version `ff` and
 * all-zero ids are invalid, and version `00` has exactly four fields. Anything else
 * (absent, malformed, too long) is undefined, and the caller starts a new trace.
 */
export function parseTraceparent(header: string | null | undefined): Trace | undefined {
  if (!header || header.length > 512) return undefined;
  const m = TRACEPARENT.exec(header.trim());
  if (!m) return undefined;
  const [, version, traceId, spanId, flags, rest] = m;
  if (version === "ff" || (version === "00" && rest !== undefined)) return undefined;
  if (ZEROS.test(traceId!) || ZEROS.test(spanId!)) return undefined;
  return { traceId: traceId!, spanId: spanId!, flags: flags! };
}

/**
 * Sampled traces a caller may ask this isolate to record per minute. A caller's sampled
 * flag makes the request write its wide event and every Durable Object it reaches write a
 * line, whatever the sample rate; past this budget the flag is cleared for this hop and
 * every hop after it (a service may record its own sampling decision), so a client that
 * sets it on every request costs no more than this in log lines.
 */
export const SAMPLED_TRACES_PER_MINUTE = 60;
const honoured = { minute: 0, count: 0 };

/** Forgets the sampled traces this isolate honoured, as a fresh isolate would start (for tests). */
export function forgetSampledTraces(): void {
  honoured.minute = 0;
  honoured.count = 0;
}

/** `trace` as this service records it: a caller's sampled flag kept within SAMPLED_TRACES_PER_MINUTE. */
export function withinSamplingBudget(trace: Trace, now = Date.now()): Trace {
  if (!isSampled(trace)) return trace;
  const minute = Math.floor(now / 60_000);
  if (minute !== honoured.minute) {
    honoured.minute = minute;
    honoured.count = 0;
  }
  if (honoured.count < SAMPLED_TRACES_PER_MINUTE) {
    honoured.count++;
    return trace;
  }
  const flags = (Number.parseInt(trace.flags, 16) & 0xfe).toString(16).padStart(2, "0");
  return { ...trace, flags };
}

/** A new span id: one hop of a trace. */
const newSpanId = (): string => randomHex(8);

/** A trace started here: a new trace id, not sampled. */
export const newTrace = (): Trace => ({ traceId: randomHex(16), spanId: newSpanId(), flags: "00" });

/** This hop's own span in the caller's trace (or a new trace when the header is absent or invalid). */
export function continueTrace(header: string | null | undefined): Trace {
  const parent = parseTraceparent(header);
  return parent ? { ...parent, spanId: newSpanId() } : newTrace();
}

/** A child span of `trace`: what a hop further on (a Durable Object, a queue message, an outbound call) carries. */
export const childOf = (trace: Trace): Trace => ({ ...trace, spanId: newSpanId() });

export const formatTraceparent = (trace: Trace): string => `00-${trace.traceId}-${trace.spanId}-${trace.flags}`;

/** Whether the caller asked for the trace to be recorded (flag bit 0). */
export const isSampled = (trace: Trace): boolean => (Number.parseInt(trace.flags, 16) & 1) === 1;

/** null: a request that carries no trace (observability switched off). */
const scope = new AsyncLocalStorage<Trace | null>();

/** Runs `fn` inside `trace`: whatever it starts (awaited or handed to waitUntil) sees it as the current trace. */
export const inTrace = <T>(trace: Trace, fn: () => T): T => scope.run(trace, fn);

/** Runs `fn` with no trace to carry: its hops send no `traceparent`. */
export const untraced = <T>(fn: () => T): T => scope.run(null, fn);

/** The trace of the request or run under way, if any. */
export const currentTrace = (): Trace | undefined => scope.getStore() ?? undefined;

/**
 * The `traceparent` for one hop out of the current trace: a child span, so each hop has
 * its own. Outside any trace (a message written before traces were carried) a new trace;
 * none inside `untraced`.
 */
export function outboundTraceparent(): string | undefined {
  const trace = scope.getStore();
  return trace === null ? undefined : formatTraceparent(childOf(trace ?? newTrace()));
}
