/**
 * The one logger: every line is one JSON object with the same leading fields, `level`
 * and `message` (what happened, a fixed phrase per call site), then the context fields
 * in snake_case (`request_id`, `agency_id`, `key_id`, `job`, `error`, …). Workers Logs
 * indexes them as they are. Never log a secret: key ids, never key material.
 */
type LogLevel = "info" | "warn" | "error";

export type LogFields = Record<string, unknown>;

const SINKS = {
  info: (line: string) => console.log(line),
  warn: (line: string) => console.warn(line),
  error: (line: string) => console.error(line),
} as const;

function write(level: LogLevel, message: string, fields: LogFields): void {
  SINKS[level](JSON.stringify({ level, message, ...fields }));
}

export const log = {
  info: (message: string, fields: LogFields = {}) => write("info", message, fields),
  warn: (message: string, fields: LogFields = {}) => write("warn", message, fields),
  error: (message: string, fields: LogFields = {}) => write("error", message, fields),
};

/**
 * Logs a job's failure as an error, unless it is a moving agency's fence (`agency_moving`):
 * the job meets it by design for the seconds of a move's switch and retries, so it is info.
 */
export const logFailure = (message: string, fields: LogFields, err: unknown) =>
  (/\bagency_moving\b/.test(String(err)) ? log.info : log.error)(message, { ...fields, error: errorText(err) });

/** An error's text as logged (`String(err)`: its name and message). */
export const errorText = (err: unknown): string => String(err);
