import type { ContentfulStatusCode } from "hono/utils/http-status";

/**
 * Every error code the service can answer, with its HTTP status and a default message.
 * This table drives the error responses and their OpenAPI documentation alike.
 */
export const ERRORS = {
  // Authentication
  api_key_missing: [401, "No X-API-Key header was sent."],
  api_key_invalid: [401, "The API key is not recognised."],
  "auth.scope_denied": [403, "The API key lacks the scope this endpoint requires."],
  auth_required: [401, "Send an X-API-Key header or a dashboard session cookie."],
  role_forbidden: [403, "The caller's role is not permitted on this endpoint."],
  agency_resolution_failed: [500, "The session's user cannot be resolved to an agency."],
  api_key_header_mismatch: [401, "Send the key in the X-API-Key header; Authorization: Bearer is not accepted."],
  api_key_malformed_prefix: [401, "The API key prefix must be sk_live_, sk_test_ or ma_live_."],
  api_key_malformed_length: [401, "The API key has the wrong length."],
  api_key_revoked: [401, "The API key was revoked."],
  api_key_expired: [401, "The API key has expired."],
  api_key_disabled: [401, "The API key is disabled."],
  api_key_wrong_mode: [401, "The API key's mode does not match this environment."],
  cross_agency: [404, "The resource belongs to another agency."],
  https_required: [403, "Plain HTTP is refused; call the API over HTTPS."],
  // Idempotency
  "idempotency.missing": [400, "Mutating requests must carry an X-Idempotency-Key header."],
  idempotency_key_invalid: [400, "X-Idempotency-Key must be 1 to 128 printable ASCII characters."],
  idempotency_key_conflict: [409, "This idempotency key was used with a different request."],
  idempotency_key_in_progress: [409, "A request with this idempotency key is still being processed."],
  idempotency_unavailable: [
    503,
    "The idempotency store is unreachable; the request was not processed. Retry with the same key.",
  ],
  // Conditional requests
  resource_version_mismatch: [
    412,
    "The resource changed since the version named in If-Match; nothing was written. Read it again and retry.",
  ],
  if_match_malformed: [400, 'If-Match must be * or a list of quoted entity tags, such as "v7".'],
  // Listings
  listing_not_found: [404, "No such listing."],
  endpoint_not_in_scope: [404, "This path under /api/v1/listings/ is not a public route."],
  listing_not_activated: [409, "The listing is not activated yet; activate it in the dashboard first."],
  no_op_transition: [409, "The listing already has this status."],
  outside_cancellation_window: [409, "The no-fee cancellation window has passed; cancel through the dashboard."],
  listing_already_cancelled: [409, "The listing is already cancelled."],
  section_not_exposed: [404, "Only the matterport and floorplan sections can be changed through the API."],
  invalid_section_payload: [422, "The section payload breaks a rule of the operation."],
  listing_number_taken: [409, "A listing with this listing_number already exists in the agency."],
  agent_not_in_hierarchy: [422, "A referenced user is not inside the agency hierarchy."],
  // Media, scheduling, users
  unsupported_mime_type: [422, "The content_type is not accepted for this asset_type."],
  file_too_large: [422, "size_bytes is above the cap for this asset_type."],
  queue_unavailable: [503, "The background delivery queue is unavailable; retry later."],
  upload_url_invalid: [403, "The upload URL is not valid; request a new one with POST /api/v1/media/upload."],
  upload_url_expired: [403, "The upload URL has expired; request a new one with POST /api/v1/media/upload."],
  upload_size_mismatch: [400, "The uploaded body does not have the size_bytes declared for this upload."],
  upload_already_completed: [409, "This upload already received its file."],
  upload_not_found: [404, "No such upload."],
  upload_not_multipart: [409, "This upload goes up in one PUT; it has no parts."],
  upload_closed: [409, "This upload was aborted or has expired; request a new upload."],
  upload_part_out_of_range: [422, "A part number is outside the upload's parts."],
  upload_part_already_stored: [409, "This part of the upload is already stored or being received."],
  upload_parts_incomplete: [409, "The part list does not name every stored part of the upload with its ETag."],
  delivery_destination_not_found: [404, "No delivery destination is configured for this agent or listing."],
  invalid_delivery_destination: [422, "The delivery destination is not usable."],
  nothing_to_deliver: [409, "The listing has no completed uploads to deliver."],
  no_pending_uploads: [409, "The listing has no pending upload whose URL is still valid."],
  calendar_not_connected: [403, "No external calendar is connected in the manager chain."],
  calendar_provider_error: [502, "The connected calendar answered with an error."],
  calendar_provider_timeout: [504, "The connected calendar did not answer in time."],
  calendar_feed_not_allowed: [422, "The ICS feed URL must be a public https URL."],
  calendar_not_sandbox: [409, "The user's own calendar is a real calendar connection, not a sandbox calendar."],
  user_not_found: [404, "No such user."],
  // Tours and resources of the internal surface
  tour_not_found: [404, "No such tour."],
  appointment_not_found: [404, "No such appointment."],
  appointment_not_scheduled: [409, "The appointment is not scheduled (it was cancelled)."],
  invalid_appointment_time: [422, "ends_at must be after starts_at."],
  order_already_recorded: [409, "A record with this provider reference exists."],
  tour_number_taken: [409, "A tour with this tour_number already exists in the agency."],
  agency_not_found: [404, "No such agency."],
  agency_move_refused: [409, "The agency cannot be moved there: it is already on that shard, or it is the platform's."],
  agency_move_in_progress: [
    409,
    "A move of this agency is already running; follow it with GET /internal/v1/moves/{move_id}.",
  ],
  move_not_found: [404, "No such move."],
  agency_moving: [
    503,
    "The agency is switching to another database; its writes resume within seconds. Retry after Retry-After " +
      "seconds; retrying with the same idempotency key is safe.",
  ],
  api_key_not_found: [404, "No such API key."],
  subscription_not_found: [404, "No such subscription."],
  user_email_taken: [409, "A user of this agency already has this email."],
  manager_not_found: [422, "The manager does not exist or is inactive."],
  hierarchy_cycle: [422, "The new manager is inside the user's own subtree."],
  invalid_role: [422, "This role cannot be used here."],
  key_mint_forbidden: [422, "This user cannot mint keys for this agency."],
  scope_not_grantable: [422, "The admin scope can be granted only on keys minted by platform admins."],
  api_key_not_rotatable: [409, "Only an active key that is not revoked can be rotated."],
  api_key_already_revoked: [409, "The key is already revoked."],
  operator_token_invalid: [401, "Send Authorization: Bearer <operator token>."],
  // Webhook management
  webhook_endpoint_not_found: [404, "No such webhook endpoint."],
  webhook_delivery_not_found: [404, "No such webhook delivery."],
  event_not_found: [404, "No such event (events are kept for 30 days)."],
  event_sequence_expired: [
    410,
    "The events after this sequence are past the 30-day window; resync from the list routes, then read the " +
      "events after details.last_sequence.",
  ],
  request_not_found: [
    404,
    "No such request: only your agency's writes that committed a change in the last 24 hours can be looked up " +
      "(a read, a refused or failed write and a replay are not kept).",
  ],
  stripe_signature_invalid: [400, "The Stripe-Signature header does not verify, or is older than 5 minutes."],
  webhook_url_not_allowed: [422, "The receiver URL must be a public https URL."],
  webhook_replay_not_found: [404, "No such replay of this endpoint."],
  webhook_replay_running: [
    409,
    "A replay of this endpoint is running (details.replay_id); follow it, or cancel it before starting another.",
  ],
  webhook_replay_range_expired: [
    422,
    "The range reaches past the 30 days of events kept; replay from details.oldest_sequence, the oldest kept.",
  ],
  webhook_replay_range_invalid: [
    422,
    "The range is reversed, or starts past the agency's latest event (details.last_sequence).",
  ],
  webhook_filter_invalid: [422, "A filter's path names no field of the payload_schema of the endpoint's event types."],
  webhook_event_type_not_allowed: [422, "An event type is unknown or cannot be subscribed to."],
  webhook_endpoint_limit_reached: [
    409,
    "The agency has the maximum number of active webhook endpoints; delete one to register another.",
  ],
  // Quotas
  agency_quota_exceeded: [
    409,
    "The agency has reached its quota for this resource; nothing was stored. Delete some, or ask for a higher quota.",
  ],
  // Rate limiting
  rate_limit_exceeded: [
    429,
    "The per-key budget for this endpoint is exhausted (or the agency's budget shared by all its keys, or the " +
      "client address failed authentication too often); retry after Retry-After seconds.",
  ],
  rate_limit_misconfigured: [500, "The caller identity or the endpoint budget could not be resolved."],
  rate_limit_unavailable: [503, "The rate-limit backend is unreachable; the request was not processed."],
  // Validation
  "validation.failed": [422, "The request body failed validation."],
  validation_type_mismatch: [422, "A field has the wrong JSON type."],
  validation_missing_required: [422, "A required field is absent."],
  validation_unknown_field: [422, "An undeclared field was sent."],
  validation_deprecated_field: [422, "A field was renamed; send it under its new name."],
  validation_out_of_range: [422, "A value is outside its bounds."],
  validation_enum_not_allowed: [422, "A value is not one of the allowed values."],
  validation_string_pattern: [422, "A string does not match its required format."],
  validation_array_length: [422, "A list is too short or too long."],
  validation_nested_error: [422, "A nested object failed validation."],
  request_query_invalid: [422, "A query parameter failed validation."],
  // Wire and server
  request_body_not_json: [400, "The body is not valid JSON."],
  request_body_empty: [400, "This request requires a JSON body; send {} if all fields are optional."],
  request_body_too_large: [413, "The body is larger than this endpoint accepts."],
  request_body_too_deep: [400, "The JSON body nests deeper than this service accepts."],
  request_content_type_mismatch: [415, "Send the body as Content-Type: application/json."],
  request_method_not_allowed: [405, "This method is not allowed on this path."],
  request_path_not_found: [404, "No such route."],
  not_implemented: [501, "This route is reserved for a future release."],
  service_unavailable: [
    503,

    "A backing store is briefly unavailable; retry after Retry-After seconds. Retrying with the same idempotency " +
      "key is safe.",
  ],
  internal_error: [500, "An unexpected error occurred. Retrying with the same idempotency key is safe."],
} as const satisfies Record<string, readonly [ContentfulStatusCode, string]>;

export type ErrorCode = keyof typeof ERRORS;

export const statusOf = (code: ErrorCode): ContentfulStatusCode => ERRORS[code][0];

/**
 * The one error type below the HTTP layer: a code from the table, a message, structured
 * details, and (for failures a retry can cure) how many seconds to wait. Domain and
 * infrastructure code throws it; only the HTTP layer turns it into a response.
 */
export class DomainError extends Error {
  readonly code: ErrorCode;
  readonly details: Record<string, unknown>;
  /** Seconds after which a retry may succeed; answered as `Retry-After`. */
  readonly retryAfter: number | undefined;

  constructor(
    code: ErrorCode,
    opts: { message?: string; details?: Record<string, unknown>; retryAfter?: number } = {},
  ) {
    super(opts.message ?? ERRORS[code][1]);
    this.name = "DomainError";
    this.code = code;
    this.details = opts.details ?? {};
    this.retryAfter = opts.retryAfter;
  }
}
