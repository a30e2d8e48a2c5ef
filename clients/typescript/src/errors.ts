/**
 * An error the API answered: the envelope `{"error": {code, message, request_id, details, doc_url}}`
 * with the HTTP status. Branch on `code`; `doc_url` explains the code and what to do, and
 * `request_id` is what to quote when asking for help.
 */
export class AlmsError extends Error {
  override readonly name = "AlmsError";
  /** The HTTP status. */
  readonly status: number;
  /** Stable snake_case identifier (some contain a dot). */
  readonly code: string;
  /** The code's entry in the error catalog; empty when the answer was not an error envelope. */
  readonly doc_url: string;
  /** The X-Request-Id of the request that got this answer. */
  readonly request_id: string;
  /** Structured context, such as `did_you_mean` or the offending fields; an empty object when none. */
  readonly details: Record<string, unknown>;
  /** The Retry-After of the answer, in seconds; null when it named none. */
  readonly retryAfter: number | null;
  /** How many attempts were made before giving up. */
  readonly attempts: number;

  constructor(init: {
    status: number;
    code: string;
    message: string;
    doc_url: string;
    request_id: string;
    details: Record<string, unknown>;
    retryAfter: number | null;
    attempts: number;
  }) {
    super(init.message);
    this.status = init.status;
    this.code = init.code;
    this.doc_url = init.doc_url;
    this.request_id = init.request_id;
    this.details = init.details;
    this.retryAfter = init.retryAfter;
    this.attempts = init.attempts;
  }
}

/** True for an AlmsError, and when `code` is given, one with that code. */
export function isAlmsError(error: unknown, code?: string): error is AlmsError {
  return error instanceof AlmsError && (code === undefined || error.code === code);
}

const isRecord = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

const text = (value: unknown, fallback: string) => (typeof value === "string" ? value : fallback);

/** Retry-After in seconds (the API sends whole seconds); null when absent or not a number. */
function retryAfterSeconds(headers: Headers): number | null {
  const raw = headers.get("Retry-After");
  if (raw === null || !/^\d{1,6}$/.test(raw.trim())) return null;
  return Number(raw.trim());
}

/**
 * The AlmsError of an answer that is not a success. An answer without the envelope (a proxy's
 * page, say) becomes code `unexpected_response` with the start of its body as the message.
 */
export function errorOf(response: Response, bodyText: string, attempts: number): AlmsError {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bodyText);
  } catch {
    parsed = undefined;
  }
  const headerId = response.headers.get("X-Request-Id") ?? "";
  const retryAfter = retryAfterSeconds(response.headers);
  const envelope = isRecord(parsed) && isRecord(parsed.error) ? parsed.error : null;
  if (envelope && typeof envelope.code === "string") {
    return new AlmsError({
      status: response.status,
      code: envelope.code,
      message: text(envelope.message, envelope.code),
      doc_url: text(envelope.doc_url, ""),
      request_id: text(envelope.request_id, headerId),
      details: isRecord(envelope.details) ? envelope.details : {},
      retryAfter,
      attempts,
    });
  }
  return new AlmsError({
    status: response.status,
    code: "unexpected_response",
    message: `HTTP ${response.status}: ${bodyText.slice(0, 200) || "(empty body)"}`,
    doc_url: "",
    request_id: headerId,
    details: {},
    retryAfter,
    attempts,
  });
}
