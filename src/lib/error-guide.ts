import { ERRORS, type ErrorCode } from "./errors";

/**
 * Whether sending the same request again can succeed:
 * - `never`: not as it is; change the request (`action` says what);
 * - `after_retry_after`: yes, after the `Retry-After` seconds, with the same idempotency key;
 * - `after_change`: yes, once something outside the request changes (a dashboard action, time).
 */
type Retry = "never" | "after_retry_after" | "after_change";

interface Guide {
  retry: Retry;
  /** What the caller should do, in one or two sentences. */
  action: string;
}

const fix = (action: string): Guide => ({ retry: "never", action });
const wait = (action: string): Guide => ({ retry: "after_retry_after", action });
const later = (action: string): Guide => ({ retry: "after_change", action });

const SEND_KEY = "Send your secret key in the X-API-Key header.";
const NEW_KEY = "Use another active key of this environment, or mint one in the dashboard.";
const FIX_FIELD = "Correct the field named in details.errors[] and send the request again.";

/**
 * What every code of the one error table asks of the caller. The error catalog
 * (`GET /api/v1/errors`) and each envelope's `doc_url` are built from this and the table.
 */
const ERROR_GUIDE = {
  api_key_missing: fix(SEND_KEY),
  api_key_invalid: fix(`The key is not known (or a rotated secret's grace ended). ${NEW_KEY}`),
  "auth.scope_denied": fix("Use a key whose scopes include details.required_scope, or mint one in the dashboard."),
  auth_required: fix("Send X-API-Key, or sign in to the dashboard again for a fresh session cookie."),
  role_forbidden: fix("Use a key minted by a user whose role is in details.allowed_roles."),
  agency_resolution_failed: fix("The session's user belongs to no agency; sign in as an agency user or send a key."),
  api_key_header_mismatch: fix("Move the key from Authorization: Bearer to the X-API-Key header."),
  api_key_malformed_prefix: fix("Copy the whole key: it starts with sk_test_ (sandbox) or sk_live_ (live)."),
  api_key_malformed_length: fix("Copy the whole key: the prefix and 43 characters; check for cut or added characters."),
  api_key_revoked: fix(`This key was revoked and stays revoked. ${NEW_KEY}`),
  api_key_expired: fix(`The key passed details.expired_at. ${NEW_KEY}`),
  api_key_disabled: later("The key is disabled; enable it in the dashboard, or use another key."),
  api_key_wrong_mode: fix("Send sk_test_ keys to the sandbox and sk_live_ keys to live."),
  cross_agency: fix("The resource belongs to another agency; use the ids your own agency's lists answer."),
  https_required: fix("Call the API over HTTPS; a key sent over plain HTTP should be rotated."),
  "idempotency.missing": fix("Send X-Idempotency-Key (a UUIDv4 per operation) on every POST, PUT, PATCH and DELETE."),
  idempotency_key_invalid: fix("Use at most 128 printable ASCII characters without spaces; a UUIDv4 fits."),
  idempotency_key_conflict: fix("This key was used for a different request; use a new key for a new operation."),
  idempotency_key_in_progress: wait("The first request with this key is still running; retry after Retry-After."),
  idempotency_unavailable: wait("Nothing was processed; retry with the same idempotency key after Retry-After."),
  resource_version_mismatch: later(
    "Someone changed the resource since you read it (details.current is its ETag now): read it again, " +
      "decide, and send the change with the new ETag in If-Match and a new idempotency key.",
  ),
  if_match_malformed: fix('Send If-Match as the ETag a read answered, quotes included (e.g. "v7"), or *.'),
  listing_not_found: fix("Check the listing_number: 7 characters of [a-z0-9], of a listing of your agency."),
  endpoint_not_in_scope: fix("Only the documented listing routes are public; see the API reference."),
  listing_not_activated: later("Activate the listing in the dashboard first, then change its status."),
  no_op_transition: fix("The listing already has this status; nothing to do."),
  outside_cancellation_window: later(
    "The no-fee window has passed; cancel through the dashboard, where a fee applies.",
  ),
  listing_already_cancelled: fix("The listing is already cancelled; nothing to do."),
  section_not_exposed: fix("Only floorplan and matterport can be changed through the API; use the dashboard."),
  invalid_section_payload: fix("Send the fields the operation needs (see details.field and details.reason)."),
  listing_number_taken: fix("Choose another listing_number, or omit it and let the service mint one."),
  agent_not_in_hierarchy: fix("Reference users of your agency's hierarchy (GET /api/v1/users lists them)."),
  unsupported_mime_type: fix("Send a content_type accepted for this asset_type (see the upload operation)."),
  file_too_large: fix("Send a smaller file: size_bytes is above the cap for this asset_type."),
  queue_unavailable: wait("Nothing was recorded; retry with the same idempotency key after Retry-After."),
  upload_url_invalid: fix("Request a new upload URL with POST /api/v1/media/upload and PUT to it unchanged."),
  upload_url_expired: fix("Upload URLs last 15 minutes; request a new one with POST /api/v1/media/upload."),
  upload_size_mismatch: fix("PUT exactly size_bytes bytes, as declared when the upload was requested."),
  upload_already_completed: fix("This upload already has its file; request a new upload for another file."),
  upload_not_found: fix("Check the upload_id: the one POST /api/v1/media/upload answered to your agency."),
  upload_not_multipart: fix("PUT the file to the url its upload answered; only a file sent in parts has parts."),
  upload_closed: fix("Request a new upload with POST /api/v1/media/upload and send the file again."),
  upload_part_out_of_range: fix("Name parts from 1 to the upload's part_count."),
  upload_part_already_stored: fix("List the stored parts and send only the missing ones; a part is sent once."),
  upload_parts_incomplete: later(
    "List the stored parts, send the missing ones, then complete with every part number and its ETag.",
  ),
  delivery_destination_not_found: later("Configure the agent's cloud storage in the dashboard."),
  invalid_delivery_destination: fix("Correct the delivery destination's settings in the dashboard."),
  nothing_to_deliver: later("Upload files for the listing first."),
  no_pending_uploads: later("Request uploads for the listing with POST /api/v1/media/upload first."),
  calendar_not_connected: later("Connect a calendar in the dashboard for the user or a manager above them."),
  calendar_provider_error: wait("The connected calendar failed; retry later, or reconnect it in the dashboard."),
  calendar_feed_not_allowed: fix("Use a public https feed URL; private, loopback and metadata addresses are refused."),
  calendar_provider_timeout: wait("The connected calendar did not answer in time; retry after a short pause."),
  calendar_not_sandbox: fix("Send replace_calendar: true to swap it for a sandbox calendar, or pick another user."),
  user_not_found: fix("Use the id of an active user of your agency (GET /api/v1/users lists them)."),
  tour_not_found: fix("Check the tour_number: 8 characters of [a-z0-9], of a tour of your agency."),
  appointment_not_found: fix("Check the appointment id and the listing it belongs to."),
  appointment_not_scheduled: fix("The appointment was cancelled; schedule a new one."),
  invalid_appointment_time: fix("Send ends_at after starts_at."),
  order_already_recorded: fix("This provider reference is recorded already; nothing to do."),
  tour_number_taken: later("Two tours drew the same number; send the request again with a new idempotency key."),
  agency_not_found: fix("Check the agency id."),
  agency_move_refused: fix("Name another shard (GET /internal/v1/shards lists them); the platform's agency stays."),
  agency_move_in_progress: later("Follow the running move (details.move_id); start another once it is done or failed."),
  move_not_found: fix("Check the move id (mov_…) that starting the move answered."),
  agency_moving: wait("Nothing was written; retry with the same idempotency key after Retry-After."),
  api_key_not_found: fix("Check the key id (key_…); the secret itself is never an id."),
  subscription_not_found: fix("Check the subscription id (sub_…): one of your agency's subscriptions."),
  user_email_taken: fix("Use another email address, or update the existing user."),
  manager_not_found: fix("Choose an active manager."),
  hierarchy_cycle: fix("Choose a manager outside the user's own subtree."),
  invalid_role: fix("Choose a role that fits the agency and the place in the hierarchy."),
  key_mint_forbidden: fix("Keys are minted by the agency's owner (media_agency or broker) or a platform admin."),
  scope_not_grantable: fix("Only keys minted by platform admins can carry the admin scope."),
  api_key_not_rotatable: fix("Only an active, unrevoked key can be rotated."),
  api_key_already_revoked: fix("The key is already revoked; nothing to do."),
  operator_token_invalid: fix("Send Authorization: Bearer with the operator token."),
  webhook_endpoint_not_found: fix("Check the endpoint id (GET /api/v1/webhooks/endpoints lists yours)."),
  webhook_delivery_not_found: fix("Check the delivery id."),
  webhook_endpoint_limit_reached: later("The agency has 16 active endpoints; delete one before registering another."),
  event_not_found: fix("Check the event id; events are kept 30 days (GET /api/v1/events lists them)."),
  event_sequence_expired: fix(
    "Note details.last_sequence, read every resource again from the list routes, then ask for the events after it.",
  ),
  request_not_found: fix(
    "Check the request id (the X-Request-Id of the answer); " +
      "only writes that committed, of the last 24 hours, are kept.",
  ),
  stripe_signature_invalid: fix("Sign with the endpoint's secret and send within 5 minutes of the signature time."),
  webhook_url_not_allowed: fix("Use a public https URL; private, loopback and metadata addresses are refused."),
  webhook_replay_not_found: fix("Check the replay id (rpl_…) that starting the replay answered."),
  webhook_replay_running: later("Follow the running replay (details.replay_id), or DELETE it, then start yours."),
  webhook_replay_range_expired: fix(
    "Replay after_sequence details.oldest_sequence - 1; older events are gone. Resync from the list routes.",
  ),
  webhook_replay_range_invalid: fix(
    "Send after_sequence below details.last_sequence and until_sequence above it, or since before until.",
  ),
  webhook_filter_invalid: fix(
    "Name a field of data that one of the endpoint's event types carries (the catalog's payload_schema).",
  ),
  webhook_event_type_not_allowed: fix("Subscribe to event types of the catalog (GET /api/v1/webhooks/events)."),
  agency_quota_exceeded: later(
    "The agency stores details.limit of details.resource already (GET /api/v1/limits shows every quota); delete " +
      "some, or ask the platform for a higher quota.",
  ),
  rate_limit_exceeded: wait("Wait Retry-After seconds (plus 0 to 5 s of jitter) before the next request."),
  rate_limit_misconfigured: later("The key's budget cannot be resolved; contact support with the request id."),
  rate_limit_unavailable: wait("Nothing was processed; retry after Retry-After."),
  "validation.failed": fix(`Several fields failed; ${FIX_FIELD}`),
  validation_type_mismatch: fix(`A field has the wrong JSON type. ${FIX_FIELD}`),
  validation_missing_required: fix("Send the required field named in details.errors[]."),
  validation_unknown_field: fix("Remove the undeclared field; details.errors[].did_you_mean suggests a name."),
  validation_deprecated_field: fix("Send the field under its new name, details.errors[].migration.to."),
  validation_out_of_range: fix(`A value is outside its bounds (details.errors[].ctx). ${FIX_FIELD}`),
  validation_enum_not_allowed: fix("Send one of the values listed in details.errors[].ctx.expected."),
  validation_string_pattern: fix(
    "A string does not match its format: details.errors[].ctx.expected names the shape in words and " +
      `ctx.example shows one; ctx.pattern is the declared pattern, where the field has one. ${FIX_FIELD}`,
  ),
  validation_array_length: fix(`A list is too short or too long. ${FIX_FIELD}`),
  validation_nested_error: fix("Correct the nested fields listed under details.errors[].children."),
  request_query_invalid: fix("Correct the query parameter named in details.errors[]."),
  request_body_not_json: fix("Send valid JSON; details.parse_error_position points at the problem."),
  request_body_too_deep: fix("Send JSON nested at most 64 levels deep."),
  request_body_empty: fix("Send a JSON body; {} when every field is optional."),
  request_body_too_large: fix("Send a smaller body: details.limit_bytes is the limit of this route."),
  request_content_type_mismatch: fix("Send the body with Content-Type: application/json."),
  request_method_not_allowed: fix("Use one of the methods in the Allow header."),
  request_path_not_found: fix("Check the path against the API reference."),
  not_implemented: later("This route is reserved for a future release."),
  service_unavailable: wait("Nothing was lost; retry with the same idempotency key after Retry-After."),
  internal_error: wait("Retry with the same idempotency key; if it persists, contact support with the request id."),
} as const satisfies Record<ErrorCode, Guide>;

/**
 * Where the dashboard or the outside world takes the step a code waits for, the sandbox has a
 * test helper that takes it. Named in the envelope and the catalog in test mode only: in live
 * the helpers do not exist. `{name}` is filled from the error's details.
 */
const SANDBOX_HELPERS: Partial<Record<ErrorCode, string>> = {
  listing_not_activated: "POST /api/v1/test_helpers/listings/{listing_number}/activate",
};

/** The sandbox's test helper for `code`, its path filled from `details` where they name the value. */
export function sandboxHelper(code: ErrorCode, details: Record<string, unknown> = {}): string | undefined {
  return SANDBOX_HELPERS[code]?.replaceAll(/\{(\w+)\}/g, (name, key: string) =>
    typeof details[key] === "string" ? encodeURIComponent(details[key]) : name,
  );
}

/** The sentence that names the sandbox's helper, added to a message or an action. */
export const sandboxSentence = (helper: string) => `In the sandbox, do it yourself with ${helper}.`;

export interface CatalogEntry extends Guide {
  code: ErrorCode;
  status: number;
  message: string;
}

/**
 * Every code of the one table with its status, default message and guide, in table order; in
 * test mode an action the sandbox can take itself names its test helper.
 */
export function errorCatalog(mode: "test" | "live"): CatalogEntry[] {
  return (Object.keys(ERRORS) as ErrorCode[]).map((code) => {
    const helper = mode === "test" ? sandboxHelper(code) : undefined;
    const { retry, action } = ERROR_GUIDE[code];
    return {
      code,
      status: ERRORS[code][0],
      message: ERRORS[code][1],
      retry,
      action: helper ? `${action} ${sandboxSentence(helper)}` : action,
    };
  });
}
