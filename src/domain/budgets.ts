/** Every window is 60 seconds. */
export const WINDOW_MS = 60_000;

/**
 * Requests per 60-second sliding window, per key and endpoint name. The first twelve
 * are the spec's; the rest are this service's choice for routes the spec leaves out.
 */
export const DEFAULT_BUDGETS = {
  cancel_listing: 100,
  create_listing: 200,
  get_availability: 600,
  get_listing_orders: 300,
  get_webhook_catalog: 60,
  read_listing_single: 600,
  read_listings_list: 300,
  read_user_single: 600,
  read_users_list: 300,
  update_listing_status: 200,
  update_section: 200,
  upload_media: 20,
  read_media_single: 600,
  read_media_list: 300,
  sign_upload_parts: 300,
  read_upload_parts: 300,
  complete_upload: 60,
  abort_upload: 60,
  read_tours_list: 300,
  read_tour_single: 600,
  create_tour: 200,
  update_tour: 200,
  delete_tour: 100,
  read_webhook_endpoints: 120,
  manage_webhook_endpoints: 60,
  replay_webhook_events: 10,
  update_rate_limits: 60,
  read_events_list: 300,
  read_event_single: 600,
  read_request_single: 600,
  read_webhook_deliveries: 120,
  book_appointment: 60,
  read_identity: 600,
  read_limits: 120,
  /** Every sandbox test helper shares this one budget. */
  test_helpers: 100,
} as const;

export type EndpointName = keyof typeof DEFAULT_BUDGETS;
export const ENDPOINT_NAMES = Object.keys(DEFAULT_BUDGETS) as EndpointName[];

/** Bounds of a per-key override. */
export const MIN_BUDGET = 1;
export const MAX_BUDGET = 100_000;

const isBudget = (n: unknown): n is number =>
  typeof n === "number" && Number.isInteger(n) && n >= MIN_BUDGET && n <= MAX_BUDGET;

/**
 * The budget of `endpoint` for a key with these overrides, or undefined when it cannot
 * be resolved (an unknown endpoint name, or a stored override that is not a valid budget).
 */
export function budgetFor(endpoint: string, overrides: Record<string, unknown> | null | undefined): number | undefined {
  if (!Object.hasOwn(DEFAULT_BUDGETS, endpoint)) return undefined;
  const override = overrides && Object.hasOwn(overrides, endpoint) ? overrides[endpoint] : undefined;
  if (override === undefined) return DEFAULT_BUDGETS[endpoint as EndpointName];
  return isBudget(override) ? override : undefined;
}

export function effectiveBudgets(overrides: Record<string, unknown> | null | undefined): Record<EndpointName, number> {
  return Object.fromEntries(
    ENDPOINT_NAMES.map((name) => [name, budgetFor(name, overrides) ?? DEFAULT_BUDGETS[name]]),
  ) as Record<EndpointName, number>;
}

/**
 * An agency's keys together get this many times a key's default budget per endpoint:
 * a handful of integrations (a CRM, a site, a feed) never meet it, and minting more keys
 * never multiplies what an agency may send.
 */
export const AGENCY_BUDGET_FACTOR = 5;

/**
 * What the agency's keys may send together to `endpoint` in a window, as seen by a key
 * whose own budget is `keyLimit`: a key an administrator raised above the agency's budget
 * keeps its raised budget; every other key is held to the agency's.
 */
export const agencyBudgetFor = (endpoint: EndpointName, keyLimit: number): number =>
  Math.max(DEFAULT_BUDGETS[endpoint] * AGENCY_BUDGET_FACTOR, keyLimit);
