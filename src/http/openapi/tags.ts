export const TEST_HELPERS_TAG = "Test helpers";

/** The operations' groups, with the rules that belong to no single operation. */
export const TAGS = [
  {
    name: "Listings",
    description:
      "Listings, their lifecycle and orders. Only the `floorplan` and `matterport` sections can be changed " +
      "through the API: a PATCH of any other section (`/api/v1/listings/{listing_number}/sections/{section}`) " +
      "answers 404 `section_not_exposed`.",
  },
  {
    name: "Media",
    description: "Pre-signed uploads of photos, videos, floorplans and documents, and where each file stands.",
  },
  { name: "Tours", description: "Property tours of your agency." },
  { name: "Users", description: "The users of your agency hierarchy (read-only)." },
  { name: "Webhooks", description: "The event catalog and your receivers." },
  { name: "Events", description: "Your agency's events of the last 30 days, as webhook deliveries carry them." },
  {
    name: "Requests",
    description: "What one of your writes of the last 24 hours did, looked up by its request id.",
  },
  {
    name: "Scheduling",
    description:
      "Availability from the connected calendar. `POST /api/v1/scheduling/appointments` is reserved for a future " +
      "release: it authenticates like any route and answers 501 `not_implemented`; book appointments through the " +
      "order form or the dashboard today.",
  },
  { name: "Administration", description: "Platform administrators only." },
  {
    name: "Limits",
    description:
      "What the calling key may still send in each rate-limit window, and what its agency may still store under " +
      "its quotas. A write that would pass a quota is refused with 409 `agency_quota_exceeded` and stores nothing.",
  },
  {
    name: TEST_HELPERS_TAG,
    description:
      "Sandbox only (`sk_test_` keys): drive what the dashboard, the payment provider, the agent's storage and " +
      "calendar normally do, so every event type can be produced without an operator. Each helper runs the same " +
      "code as the real trigger, so its events are written, listed and delivered like any other. They are not " +
      "part of the live API: there, every `/api/v1/test_helpers/…` path answers 404 `request_path_not_found` " +
      "like an unknown path, and the live description leaves them out. All share the `test_helpers` budget. " +
      "Each needs the scope of what it changes (`x-required-scope`): the write scope where the API has one " +
      "(`listings:write`, `media:write`); users, billing and calendars, which the API only reads, need their read " +
      "scope (`users:read`, `orders:read`, `scheduling:read`) and every other scope but `admin` " +
      "(`x-required-scopes`): a read scope never writes. `webhooks:write` opens none of them.",
  },
  {
    name: "Errors",
    description:
      "Every error is one envelope; `error.doc_url` links to the code's entry in the catalog, which says " +
      "whether a retry helps and what to do.",
  },
];
