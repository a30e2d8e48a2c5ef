// Secrets that are optional in every environment (see docs/operators.md). They are not
// listed as required in wrangler.jsonc, so `wrangler types` leaves them out of Env.
interface OptionalSecrets {
  /**
   * Older master keys that still open and verify what they sealed and signed while a rotation
   * runs, separated by commas or spaces; `SECRET_KEY` is always the newest and the one that seals.
   */
  SECRET_KEY_PREVIOUS?: string;
  /** Enables the internal (dashboard) surface; without it every /internal/ path is an unknown path. */
  OPERATOR_TOKEN?: string;
  /**
   * R2's S3-compatible credentials. With all four set, upload URLs are pre-signed for R2
   * directly; without them, uploads go through the Worker's own signed upload path.
   */
  R2_ACCOUNT_ID?: string;
  R2_ACCESS_KEY_ID?: string;
  R2_SECRET_ACCESS_KEY?: string;
  /** The name of the bucket bound as UPLOADS in this environment. */
  R2_BUCKET_NAME?: string;
  /** The payment provider's webhook signing secret; enables POST /hooks/stripe. */
  STRIPE_WEBHOOK_SECRET?: string;
  /** The OAuth client secret used to refresh Google Calendar tokens. */
  GOOGLE_CLIENT_SECRET?: string;
  /** Calendar provider timeout in ms (default 8000). */
  CALENDAR_TIMEOUT_MS?: string;
  /** "off" skips each request's wide event, usage data point and trace (default "on"). */
  OBSERVABILITY?: string;
  /** The share of ordinary requests whose wide event is logged, 0 to 1 (default 1); errors and slow ones always are. */
  WIDE_EVENT_SAMPLE_RATE?: string;
  /** How long, in ms, a moved agency's old shard keeps refusing its writes after the switch (default 10000). */
  MOVE_DWELL_MS?: string;
}

interface Env extends OptionalSecrets {}
declare namespace Cloudflare {
  interface Env extends OptionalSecrets {}
}
