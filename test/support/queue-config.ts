/** The webhook consumer's `max_batch_size` in wrangler.jsonc, the same in every environment. */
export const CONSUMER_BATCH = 25;
/** The webhook consumer's `max_batch_timeout` in wrangler.jsonc, in milliseconds: a batch leaves without waiting to fill. */
export const CONSUMER_BATCH_TIMEOUT_MS = 0;
