import { log } from "../lib/telemetry/log";
import { isSampled, parseTraceparent } from "../lib/telemetry/trace";

/**
 * A Durable Object's line for one call it got with a trace context: logged only when the
 * caller marked the trace as sampled (`traceparent` flags `01`), so an ordinary request
 * costs its objects no log line, and a traced one can be followed through every object
 * it reached. `fields` is built only when the line is written.
 */
export function tracedCall(
  traceparent: string | undefined,
  message: string,
  fields: () => Record<string, unknown>,
): void {
  const trace = parseTraceparent(traceparent);
  if (!trace || !isSampled(trace)) return;
  log.info(message, { trace_id: trace.traceId, span_id: trace.spanId, ...fields() });
}
