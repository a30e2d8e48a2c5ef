/**
 * Every table of an agency's rows, in the order a move copies them (a row's parents first)
 * and for each how a move finds, pages and checks its rows. A table is the agency's by its own
 * `agency_id` column (`owner: "agency_id"`), or through the parent row a column names (a
 * secret through its key, an attempt through its delivery). The schema's triggers that
 * journal and fence a leaving agency's rows are written from this list, and a test holds the
 * two (and the schema) to each other.
 */
export interface MovedTable {
  name: string;
  /** The primary key's columns. */
  key: readonly string[];
  /** The column holding the agency's id, or the parent row that decides it. */
  owner: "agency_id" | "id" | { parent: string; via: string };
  /**
   * Columns an index walks in order after the agency's id (or after the parent's own order,
   * for a child table), unique together: a move's pages follow them, so a page costs what it
   * reads. `rowid` may close the list.
   */
  order: readonly string[];
  /** Columns naming a row of another moved table by its `id`, which must be copied first. */
  refs?: readonly (readonly [column: string, table: string])[];
}

const child = (parent: string, via: string) => ({ parent, via });

export const MOVED_TABLES: readonly MovedTable[] = [
  { name: "agencies", key: ["id"], owner: "id", order: ["id"] },
  { name: "users", key: ["id"], owner: "agency_id", order: ["created_at", "id"] },
  { name: "sessions", key: ["token_hash"], owner: child("users", "user_id"), order: ["rowid"] },
  {
    name: "api_keys",
    key: ["id"],
    owner: "agency_id",
    order: ["created_at", "id"],
    refs: [["minted_by_user_id", "users"]],
  },
  { name: "api_key_secrets", key: ["hash"], owner: child("api_keys", "key_id"), order: ["rowid"] },
  { name: "agency_quotas", key: ["agency_id", "resource"], owner: "agency_id", order: ["resource"] },
  { name: "agency_usage", key: ["agency_id", "resource"], owner: "agency_id", order: ["resource"] },
  { name: "subscriptions", key: ["id"], owner: "agency_id", order: ["rowid"] },
  { name: "listings", key: ["id"], owner: "agency_id", order: ["created_at", "id"] },
  { name: "listing_orders", key: ["id"], owner: "agency_id", order: ["id"], refs: [["listing_id", "listings"]] },
  { name: "appointments", key: ["id"], owner: "agency_id", order: ["id"], refs: [["listing_id", "listings"]] },
  { name: "media_uploads", key: ["id"], owner: "agency_id", order: ["id"], refs: [["listing_id", "listings"]] },
  {
    name: "media_upload_parts",
    key: ["upload_id", "part_number"],
    owner: child("media_uploads", "upload_id"),
    order: ["part_number"],
  },
  { name: "media_deliveries", key: ["id"], owner: "agency_id", order: ["id"], refs: [["listing_id", "listings"]] },
  {
    name: "media_delivery_files",
    key: ["delivery_id", "upload_id"],
    owner: child("media_deliveries", "delivery_id"),
    order: ["upload_id"],
    refs: [["upload_id", "media_uploads"]],
  },
  {
    name: "delivery_destinations",
    key: ["user_id"],
    owner: "agency_id",
    order: ["user_id"],
    refs: [["user_id", "users"]],
  },
  { name: "calendar_connections", key: ["id"], owner: "agency_id", order: ["id"], refs: [["user_id", "users"]] },
  { name: "calendar_discrepancies", key: ["id"], owner: "agency_id", order: ["id"] },
  { name: "sandbox_calendar_blocks", key: ["id"], owner: "agency_id", order: ["id"], refs: [["user_id", "users"]] },
  { name: "tours", key: ["id"], owner: "agency_id", order: ["created_at", "id"] },
  { name: "tour_counts", key: ["agency_id", "status"], owner: "agency_id", order: ["status"] },
  { name: "tour_search_grams", key: ["agency_id", "gram", "tour_id"], owner: "agency_id", order: ["gram", "tour_id"] },
  { name: "tour_search_gram_counts", key: ["agency_id", "gram"], owner: "agency_id", order: ["gram"] },
  { name: "webhook_endpoints", key: ["id"], owner: "agency_id", order: ["created_at", "id"] },
  {
    name: "webhook_replays",
    key: ["id"],
    owner: "agency_id",
    order: ["created_at", "id"],
    refs: [["endpoint_id", "webhook_endpoints"]],
  },
  { name: "events", key: ["id"], owner: "agency_id", order: ["sequence"] },
  { name: "event_sequences", key: ["agency_id"], owner: "agency_id", order: ["agency_id"] },
  { name: "webhook_deliveries", key: ["id"], owner: "agency_id", order: ["created_at", "rowid"] },
  {
    name: "webhook_delivery_attempts",
    key: ["id"],
    owner: child("webhook_deliveries", "delivery_id"),
    order: ["attempt", "rowid"],
  },
  { name: "idempotency_marks", key: ["agency_id", "idem_key"], owner: "agency_id", order: ["idem_key"] },
];

/** Tables of the platform's own, which no move copies: the control database's and each shard's bookkeeping. */
export const PLATFORM_TABLES = [
  "agency_shards",
  "secret_directory",
  "agency_moves",
  "agency_departures",
  "move_journal",
  "move_mute",
  "quota_defaults",
  "job_cursors",
  "provider_events",
] as const;

export const movedTable = (name: string): MovedTable | undefined => MOVED_TABLES.find((t) => t.name === name);
