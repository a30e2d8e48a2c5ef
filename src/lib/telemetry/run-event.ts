import { type LogFields, log } from "./log";
import { continueTrace, inTrace } from "./trace";

interface Run {
  /** What runs: `queue`, `cron`, `outbox_drain`. */
  job: string;
  environment: string | undefined;
  /** The trace to continue (a queue message's); a new trace otherwise. */
  traceparent?: string | null;
  fields?: LogFields;
}

/**
 * Background work's wide event: `work` runs inside a trace, and when it ends one line is
 * written through the one logger, as a request's is: the job, its trace, environment,
 * latency, `outcome` (ok or failed) and the counts the work answered (a plain object's
 * number fields). A failure is still thrown to the caller, which logs or retries it.
 */
export async function inRun<T>(run: Run, work: () => Promise<T>): Promise<T> {
  const trace = continueTrace(run.traceparent);
  const started = Date.now();
  let outcome = "failed";
  let counts: LogFields = {};
  try {
    const result = await inTrace(trace, work);
    outcome = "ok";
    counts = countsOf(result);
    return result;
  } finally {
    log.info("run", {
      job: run.job,
      trace_id: trace.traceId,
      environment: run.environment ?? "unknown",
      ...run.fields,
      outcome,
      latency_ms: Date.now() - started,
      ...counts,
    });
  }
}

function countsOf(result: unknown): LogFields {
  if (!result || typeof result !== "object") return {};
  const counts: LogFields = {};
  for (const [name, value] of Object.entries(result)) if (typeof value === "number") counts[name] = value;
  return counts;
}
