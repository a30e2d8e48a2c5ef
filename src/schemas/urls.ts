import { z } from "@hono/zod-openapi";

/** Longest URL any request field accepts. */
export const MAX_URL_LENGTH = 2048;

/**
 * A URL the service stores and shows to others (pages, apps, webhooks' data): an
 * absolute https URL, never `javascript:`, `data:`, `file:` or `http:`. Documented as
 * `format: uri`; anything else is 422 `validation_string_pattern`.
 */
export const renderedUrl = () => z.url({ protocol: /^https$/ }).max(MAX_URL_LENGTH);
