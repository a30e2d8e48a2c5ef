import { sql } from "drizzle-orm";
import { index, integer, primaryKey, sqliteTable, text, uniqueIndex } from "drizzle-orm/sqlite-core";

const now = sql`(strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`;
const createdAt = () => text("created_at").notNull().default(now);
const updatedAt = () => text("updated_at").notNull().default(now);

/** An accredited media agency or broker; `platform` holds the platform's own staff. */
export const agencies = sqliteTable("agencies", {
  id: text("id").primaryKey(),
  name: text("name").notNull(),
  kind: text("kind", { enum: ["media_agency", "broker", "platform"] }).notNull(),
  cancellationNoticeHours: integer("cancellation_notice_hours").notNull().default(24),
  createdAt: createdAt(),
});

/**
 * The control database's map of agencies to shards (read on the control database only; the
 * other databases carry the table empty). An agency's own rows live on its shard.
 */
export const agencyShards = sqliteTable(
  "agency_shards",
  {
    agencyId: text("agency_id").primaryKey(),
    shard: text("shard").notNull(),
    createdAt: createdAt(),
  },
  (t) => [index("agency_shards_shard").on(t.shard, t.agencyId)],
);

/**
 * The control database's directory of the secrets of keys whose agency lives on another shard
 * (a secret is looked up before its agency is known). Keys of the first shard, which is the
 * control database itself, are found in `api_key_secrets` there.
 */
export const secretDirectory = sqliteTable("secret_directory", {
  hash: text("hash").primaryKey(),
  keyId: text("key_id").notNull(),
  agencyId: text("agency_id").notNull(),
});

/**
 * The control database's record of each move of an agency from one shard to another: where
 * it is (`status`, and the step within it), how far each step got (`cursor`), and its counts.
 */
export const agencyMoves = sqliteTable(
  "agency_moves",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull(),
    fromShard: text("from_shard").notNull(),
    toShard: text("to_shard").notNull(),
    status: text("status", { enum: ["copying", "switching", "done", "failed"] }).notNull(),
    step: text("step").notNull(),
    cursor: text("cursor"),
    rowsCopied: integer("rows_copied").notNull().default(0),
    changesApplied: integer("changes_applied").notNull().default(0),
    rowsDeleted: integer("rows_deleted").notNull().default(0),
    failures: integer("failures").notNull().default(0),
    error: text("error"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    switchedAt: text("switched_at"),
    finishedAt: text("finished_at"),
  },
  (t) => [
    index("agency_moves_agency").on(t.agencyId, t.createdAt),
    uniqueIndex("agency_moves_running").on(t.agencyId).where(sql`${t.status} IN ('copying', 'switching')`),
  ],
);

/**
 * A moving agency on each shard it touches, and how far its move got: on the shard it leaves,
 * while `copying` every change to its rows is journalled; once `fenced` every write to them is
 * refused; once `gone` (the new shard serves it) inserts are refused and updates and deletes
 * skip its rows, which the move deletes in pages. On the shard it goes to, `arriving` is like
 * `gone` until the switch: that shard's jobs leave the copied rows alone. Kept by triggers on
 * every table of an agency's rows.
 */
export const agencyDepartures = sqliteTable("agency_departures", {
  agencyId: text("agency_id").primaryKey(),
  moveId: text("move_id").notNull(),
  state: text("state", { enum: ["copying", "fenced", "gone", "arriving"] }).notNull(),
});

/** The rows a leaving agency changed while its move copied them: table and primary key, in order. */
export const moveJournal = sqliteTable(
  "move_journal",
  {
    seq: integer("seq").primaryKey({ autoIncrement: true }),
    agencyId: text("agency_id").notNull(),
    tableName: text("table_name").notNull(),
    rowKey: text("row_key").notNull(),
  },
  (t) => [index("move_journal_agency").on(t.agencyId, t.seq)],
);

/**
 * Empty but inside a move's own batches, which put a row here first and take it out last:
 * the schema's triggers (counters, quotas, sequences, versions, the journal) skip what such a
 * batch writes, since it copies rows with what they derived already, or deletes them whole.
 */
export const moveMute = sqliteTable("move_mute", {
  id: integer("id").primaryKey(),
});

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    role: text("role").notNull(),
    managerId: text("manager_id"),
    name: text("name").notNull(),
    email: text("email").notNull(),
    isActive: integer("is_active", { mode: "boolean" }).notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** Raised by every change a reader can see (a trigger, in the same statement); the ETag is built from it. */
    version: integer("version").notNull().default(1),
  },
  (t) => [
    // An email is unique within its agency only: another agency's addresses are never an answer.
    uniqueIndex("users_agency_email_unique").on(t.agencyId, t.email),
    index("users_agency_page").on(t.agencyId, t.createdAt, t.id),
    index("users_manager").on(t.managerId),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    mintedByUserId: text("minted_by_user_id")
      .notNull()
      .references(() => users.id),
    /** The caller role of every request made with this key: the minting user's role at minting. */
    role: text("role").notNull(),
    mode: text("mode", { enum: ["test", "live"] }).notNull(),
    name: text("name").notNull().default(""),
    scopes: text("scopes", { mode: "json" }).$type<string[]>().notNull(),
    isActive: integer("is_active", { mode: "boolean" }).notNull().default(true),
    revokedAt: text("revoked_at"),
    expiresAt: text("expires_at"),
    rotationStartedAt: text("rotation_started_at"),
    rateLimitOverrides: text("rate_limit_overrides", { mode: "json" })
      .$type<Record<string, number>>()
      .notNull()
      .default(sql`'{}'`),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("api_keys_agency").on(t.agencyId, t.createdAt, t.id),
    index("api_keys_minter").on(t.mintedByUserId, t.id),
  ],
);

/**
 * Secrets of a key, stored only as SHA-256 hashes. A hash maps to its key forever; a
 * rotation supersedes the current secret (grace window) instead of deleting it.
 */
export const apiKeySecrets = sqliteTable(
  "api_key_secrets",
  {
    hash: text("hash").primaryKey(),
    keyId: text("key_id")
      .notNull()
      .references(() => apiKeys.id),
    prefix: text("prefix").notNull(),
    last4: text("last4").notNull(),
    createdAt: createdAt(),
    supersededAt: text("superseded_at"),
    deactivatedAt: text("deactivated_at"),
  },
  (t) => [index("api_key_secrets_key").on(t.keyId), index("api_key_secrets_deactivated").on(t.deactivatedAt)],
);

export const sessions = sqliteTable(
  "sessions",
  {
    tokenHash: text("token_hash").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    expiresAt: text("expires_at").notNull(),
    revokedAt: text("revoked_at"),
    createdAt: createdAt(),
  },
  // Revoking a session also expires it, so the nightly purge reads this one index.
  (t) => [index("sessions_user").on(t.userId), index("sessions_expires").on(t.expiresAt)],
);

export const listings = sqliteTable(
  "listings",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    listingNumber: text("listing_number").notNull(),
    address: text("address").notNull(),
    status: text("status").notNull().default("Coming Soon"),
    isActivated: integer("is_activated", { mode: "boolean" }).notNull().default(false),
    activatedAt: text("activated_at"),
    ownerUserId: text("owner_user_id").notNull(),
    agentOneId: text("agent_one_id").notNull(),
    agentTwoId: text("agent_two_id"),
    floorplanUrls: text("floorplan_urls", { mode: "json" }).$type<string[]>().notNull().default(sql`'[]'`),
    matterportUrl: text("matterport_url"),
    cancelledAt: text("cancelled_at"),
    cancellationReason: text("cancellation_reason"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** Raised by every change a reader can see (a trigger, in the same statement); the ETag is built from it. */
    version: integer("version").notNull().default(1),
  },
  (t) => [
    uniqueIndex("listings_agency_number").on(t.agencyId, t.listingNumber),
    index("listings_agency_page").on(t.agencyId, t.createdAt, t.id),
    index("listings_agency_status_page").on(t.agencyId, t.status, t.createdAt, t.id),
    index("listings_agency_owner_page").on(t.agencyId, t.ownerUserId, t.createdAt, t.id),
    index("listings_agency_agent_one_page").on(t.agencyId, t.agentOneId, t.createdAt, t.id),
    index("listings_agency_agent_two_page").on(t.agencyId, t.agentTwoId, t.createdAt, t.id),
  ],
);

/** Shoot appointments of a listing, held on the agency's external calendar. */
export const appointments = sqliteTable(
  "appointments",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    listingId: text("listing_id")
      .notNull()
      .references(() => listings.id),
    status: text("status", { enum: ["scheduled", "cancelled"] })
      .notNull()
      .default("scheduled"),
    startsAt: text("starts_at").notNull(),
    endsAt: text("ends_at").notNull(),
    calendarEventId: text("calendar_event_id"),
    /**
     * Set by the nightly sweep once the shoot ended more than a day ago: a closed
     * appointment is history, no longer reconciled. Rescheduling clears it.
     */
    closedAt: text("closed_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("appointments_agency_rows").on(t.agencyId, t.id),
    index("appointments_listing").on(t.listingId, t.status, t.startsAt),
    // What reconciliation walks: an agency's open shoots on a calendar, by id.
    index("appointments_reconcile")
      .on(t.agencyId, t.id)
      .where(sql`${t.status} = 'scheduled' AND ${t.closedAt} IS NULL AND ${t.calendarEventId} IS NOT NULL`),
    // What the closing sweep walks: open shoots by their end.
    index("appointments_open_end").on(t.endsAt).where(sql`${t.status} = 'scheduled' AND ${t.closedAt} IS NULL`),
  ],
);

/** Invoices and payments tied to a listing (the listing's orders). */
export const listingOrders = sqliteTable(
  "listing_orders",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    listingId: text("listing_id")
      .notNull()
      .references(() => listings.id),
    kind: text("kind", { enum: ["invoice", "payment"] }).notNull(),
    invoiceId: text("invoice_id"),
    amountMinor: integer("amount_minor").notNull(),
    currency: text("currency").notNull(),
    status: text("status").notNull(),
    providerReference: text("provider_reference"),
    issuedAt: text("issued_at"),
    paidAt: text("paid_at"),
    createdAt: createdAt(),
    /** Raised by every change a reader can see (a trigger, in the same statement); the ETag is built from it. */
    version: integer("version").notNull().default(1),
  },
  (t) => [
    index("listing_orders_agency_rows").on(t.agencyId, t.id),
    index("listing_orders_page").on(t.listingId, t.createdAt, t.id),
    uniqueIndex("listing_orders_provider_ref").on(t.kind, t.providerReference),
  ],
);

export const tours = sqliteTable(
  "tours",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    tourNumber: text("tour_number").notNull(),
    address: text("address").notNull(),
    city: text("city").notNull(),
    state: text("state").notNull(),
    zipcode: text("zipcode").notNull(),
    status: text("status").notNull().default("active"),
    mlsNumber: text("mls_number"),
    price: integer("price"),
    bedrooms: integer("bedrooms"),
    bathrooms: integer("bathrooms"),
    sqft: integer("sqft"),
    description: text("description"),
    images: text("images", { mode: "json" }).$type<unknown[]>().notNull().default(sql`'[]'`),
    virtualTourUrl: text("virtual_tour_url"),
    calendarEventId: text("calendar_event_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** Raised by every change a reader can see (a trigger, in the same statement); the ETag is built from it. */
    version: integer("version").notNull().default(1),
  },
  (t) => [
    uniqueIndex("tours_agency_number").on(t.agencyId, t.tourNumber),
    index("tours_agency_page").on(t.agencyId, t.createdAt, t.id),
    index("tours_agency_status_page").on(t.agencyId, t.status, t.createdAt, t.id),
  ],
);

/**
 * How many tours an agency has in each status. Kept exact by triggers on `tours` (the
 * tour_count_and_search_triggers migration), so it changes in the same statement as the
 * tour, whatever code writes it.
 */
export const tourCounts = sqliteTable(
  "tour_counts",
  {
    agencyId: text("agency_id").notNull(),
    status: text("status").notNull(),
    tours: integer("tours").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.agencyId, t.status] })],
);

/**
 * The tour address search index, kept by triggers on `tours` (the same migration): for every
 * character position of lower(address), the (up to) 3 characters starting there. A term
 * (3 characters at least) is found through the postings of its rarest trigram. Plain table,
 * not FTS5, so `wrangler d1 export` still works.
 */
export const tourSearchGrams = sqliteTable(
  "tour_search_grams",
  {
    agencyId: text("agency_id").notNull(),
    gram: text("gram").notNull(),
    tourId: text("tour_id").notNull(),
  },
  (t) => [primaryKey({ columns: [t.agencyId, t.gram, t.tourId] })],
);

/** How many of an agency's tours hold each gram, so a search starts from its rarest trigram. */
export const tourSearchGramCounts = sqliteTable(
  "tour_search_gram_counts",
  {
    agencyId: text("agency_id").notNull(),
    gram: text("gram").notNull(),
    tours: integer("tours").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.agencyId, t.gram] })],
);

/**
 * Transactional outbox: an event row is written in the same D1 batch as the change it
 * describes, and delivery drains it.
 */
export const events = sqliteTable(
  "events",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull(),
    eventType: text("event_type").notNull(),
    apiVersion: text("api_version").notNull(),
    timestamp: integer("timestamp").notNull(),
    data: text("data", { mode: "json" }).$type<Record<string, unknown>>().notNull(),
    enqueuedAt: text("enqueued_at"),
    createdAt: createdAt(),
    /** Until when a drain holds this unsent event; past it, another drain may take it. */
    claimedUntil: text("claimed_until"),
    /** Drains whose fan-out of this event failed, and the last failure. */
    attempts: integer("attempts").notNull().default(0),
    lastError: text("last_error"),
    /** When the event was set aside after failing every attempt; no drain takes it again. */
    setAsideAt: text("set_aside_at"),
    /** The W3C `traceparent` of the request that wrote it: its deliveries carry the same trace. */
    traceParent: text("trace_parent"),
    /**
     * The event's place in its agency's sequence: 1, 2, 3… with no gap, set by a trigger in
     * the statement that inserts the event (so in the batch of the change that caused it).
     */
    sequence: integer("sequence"),
    /** The readable resource the event describes (`listing`, `user`, `order`), its id, its version after the change. */
    resourceType: text("resource_type"),
    resourceId: text("resource_id"),
    resourceVersion: integer("resource_version"),
  },
  (t) => [
    // The sync feed: an agency's events in sequence order; unique, so a repeat cannot be stored.
    uniqueIndex("events_agency_sequence").on(t.agencyId, t.sequence),
    // The feed of one type reads that type's entries only, in sequence order.
    index("events_agency_type_sequence").on(t.agencyId, t.eventType, t.sequence),
    // The events API: a keyset page of one agency's events, all of them or of one type.
    index("events_agency_page").on(t.agencyId, t.createdAt, t.id),
    index("events_agency_type_page").on(t.agencyId, t.eventType, t.createdAt, t.id),
    // The retention sweep walks events from the oldest.
    index("events_created").on(t.createdAt),
    // The drain's claim walks unsent events agency by agency, oldest first within each,
    // skipping claimed ones within the index.
    index("events_unsent")
      .on(t.agencyId, t.createdAt, t.id, t.claimedUntil)
      .where(sql`${t.enqueuedAt} IS NULL AND ${t.setAsideAt} IS NULL`),
    // The request inspector: the events one request wrote.
    index("events_trace").on(t.agencyId, t.traceParent, t.createdAt, t.id).where(sql`${t.traceParent} IS NOT NULL`),
  ],
);

/** The last sequence number given to each agency's events (see `events.sequence`). */
export const eventSequences = sqliteTable("event_sequences", {
  agencyId: text("agency_id").primaryKey(),
  last: integer("last").notNull(),
  /** The `created_at` of the agency's latest event: no later event is recorded as older. */
  lastCreatedAt: text("last_created_at"),
});

export type Agency = typeof agencies.$inferSelect;
export type User = typeof users.$inferSelect;
export type ApiKey = typeof apiKeys.$inferSelect;
export type ApiKeySecret = typeof apiKeySecrets.$inferSelect;
export type Listing = typeof listings.$inferSelect;
export type Tour = typeof tours.$inferSelect;
export type ListingOrder = typeof listingOrders.$inferSelect;
export type Appointment = typeof appointments.$inferSelect;
export type EventRow = typeof events.$inferSelect;

/**
 * The commit record of an idempotent request, written in the same `db.batch` as the
 * change. Its primary key makes a second execution of the same key fail as a whole, and
 * lets a retry after a crash answer from the committed resource instead of re-running.
 */
export const idempotencyMarks = sqliteTable(
  "idempotency_marks",
  {
    agencyId: text("agency_id").notNull(),
    idemKey: text("idem_key").notNull(),
    requestHash: text("request_hash").notNull(),
    status: integer("status").notNull(),
    resourceType: text("resource_type"),
    resourceId: text("resource_id"),
    expiresAt: text("expires_at").notNull(),
    createdAt: createdAt(),
    /** The request that committed it, as the request inspector looks it up. */
    requestId: text("request_id"),
    /** The route's operation id, method and path of that request. */
    operationId: text("operation_id"),
    method: text("method"),
    path: text("path"),
    /** Its W3C `traceparent`: the events it wrote carry the same one. */
    traceParent: text("trace_parent"),
  },
  (t) => [
    primaryKey({ columns: [t.agencyId, t.idemKey] }),
    index("idempotency_marks_expiry").on(t.expiresAt),
    index("idempotency_marks_request").on(t.requestId),
  ],
);
export type IdempotencyMark = typeof idempotencyMarks.$inferSelect;

/**
 * A file announced through POST /media/upload. It stays `pending` until its bytes land
 * in R2 (then `completed`), or its upload URL lapses unused (`expired`).
 */
export const mediaUploads = sqliteTable(
  "media_uploads",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    listingId: text("listing_id").references(() => listings.id),
    assetType: text("asset_type").notNull(),
    contentType: text("content_type").notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    filename: text("filename"),
    objectKey: text("object_key").notNull(),
    status: text("status", { enum: ["pending", "completed", "expired", "aborted"] })
      .notNull()
      .default("pending"),
    /** R2's id of the multipart upload holding the file's parts; null for a file sent in one PUT. */
    multipartId: text("multipart_id"),
    /** The size of every part but the last (which holds the remainder); null for a single PUT. */
    partSizeBytes: integer("part_size_bytes"),
    createdByUserId: text("created_by_user_id").notNull(),
    expiresAt: text("expires_at").notNull(),
    completedAt: text("completed_at"),
    /** The ETag of the one object the upload completed with; a delivery copies that object or nothing. */
    objectEtag: text("object_etag"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("media_uploads_agency_rows").on(t.agencyId, t.id),
    uniqueIndex("media_uploads_object_key").on(t.objectKey),
    index("media_uploads_listing").on(t.listingId, t.status, t.createdAt),
    // A listing's uploads are read a cursor page at a time, in (created_at, id) order.
    index("media_uploads_listing_page").on(t.listingId, t.createdAt, t.id),
  ],
);

/**
 * A part of a multipart upload received on the service's own upload path: claimed while
 * its bytes stream in (`receiving`), then `stored` with R2's ETag. The claim makes each
 * part single use; a claim left by a request that died is taken over once it is stale.
 */
export const mediaUploadParts = sqliteTable(
  "media_upload_parts",
  {
    uploadId: text("upload_id")
      .notNull()
      .references(() => mediaUploads.id),
    partNumber: integer("part_number").notNull(),
    status: text("status", { enum: ["receiving", "stored"] }).notNull(),
    sizeBytes: integer("size_bytes").notNull(),
    etag: text("etag"),
    claimedAt: text("claimed_at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.uploadId, t.partNumber] })],
);

export type MediaUploadPart = typeof mediaUploadParts.$inferSelect;

/** An agent's own cloud storage (any S3-compatible bucket), where listing media is delivered. */
export const deliveryDestinations = sqliteTable(
  "delivery_destinations",
  {
    userId: text("user_id")
      .primaryKey()
      .references(() => users.id),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    provider: text("provider", { enum: ["s3"] })
      .notNull()
      .default("s3"),
    endpointUrl: text("endpoint_url").notNull(),
    bucket: text("bucket").notNull(),
    region: text("region").notNull(),
    addressingStyle: text("addressing_style", { enum: ["path", "virtual"] })
      .notNull()
      .default("path"),
    accessKeyId: text("access_key_id").notNull(),
    /** Sealed under the keyring (domain/sealed-columns.ts); never stored or answered in plaintext. */
    secretAccessKeySealed: text("secret_access_key_sealed").notNull(),
    pathPrefix: text("path_prefix").notNull().default(""),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("delivery_destinations_agency_rows").on(t.agencyId, t.userId)],
);

/** One copy of a listing's uploaded files to an agent's destination. */
export const mediaDeliveries = sqliteTable(
  "media_deliveries",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    listingId: text("listing_id")
      .notNull()
      .references(() => listings.id),
    destinationUserId: text("destination_user_id").notNull(),
    trigger: text("trigger", { enum: ["upload", "manual"] }).notNull(),
    status: text("status", { enum: ["queued", "delivering", "completed", "failed"] })
      .notNull()
      .default("queued"),
    attempts: integer("attempts").notNull().default(0),
    filesTotal: integer("files_total").notNull().default(0),
    filesDelivered: integer("files_delivered").notNull().default(0),
    filesFailed: integer("files_failed").notNull().default(0),
    error: text("error"),
    finishedAt: text("finished_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("media_deliveries_agency_rows").on(t.agencyId, t.id),
    index("media_deliveries_listing").on(t.listingId, t.createdAt),
    // The sweep for deliveries that stopped making progress reads unfinished ones by age.
    index("media_deliveries_unfinished").on(t.status, t.updatedAt),
  ],
);

/** The files a delivery carries, each with its own outcome, so a retry resends only what failed. */
export const mediaDeliveryFiles = sqliteTable(
  "media_delivery_files",
  {
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => mediaDeliveries.id),
    uploadId: text("upload_id")
      .notNull()
      .references(() => mediaUploads.id),
    status: text("status", { enum: ["pending", "delivered", "failed"] })
      .notNull()
      .default("pending"),
    /** A failure no retry can fix (the source object is gone, the bucket refused the request). */
    permanent: integer("permanent", { mode: "boolean" }).notNull().default(false),
    error: text("error"),
    updatedAt: updatedAt(),
  },
  (t) => [
    primaryKey({ columns: [t.deliveryId, t.uploadId] }),
    index("media_delivery_files_upload").on(t.uploadId, t.status),
  ],
);

export type MediaUpload = typeof mediaUploads.$inferSelect;
export type DeliveryDestination = typeof deliveryDestinations.$inferSelect;
export type MediaDelivery = typeof mediaDeliveries.$inferSelect;
export type MediaDeliveryFile = typeof mediaDeliveryFiles.$inferSelect;

/**
 * A receiver registered by an agency. `event_types` null means every active type. The
 * signing secret is stored sealed (AES-GCM under the master keyring's newest key, naming
 * that key; see domain/sealed-columns.ts), never in plaintext.
 */
export const webhookEndpoints = sqliteTable(
  "webhook_endpoints",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    url: text("url").notNull(),
    eventTypes: text("event_types", { mode: "json" }).$type<string[] | null>(),
    description: text("description"),
    secretSealed: text("secret_sealed").notNull(),
    isActive: integer("is_active", { mode: "boolean" }).notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** Failed attempts in a row (any success resets it): the receiver's circuit breaker. */
    consecutiveFailures: integer("consecutive_failures").notNull().default(0),
    /** While in the future, the breaker is open: deliveries wait without a request. */
    pausedUntil: text("paused_until"),
    /**
     * Sandbox only: how many of the endpoint's next attempts are dropped (dead, with no
     * request) to rehearse a gap; a trigger takes one in the statement that leases each.
     */
    sandboxDropNext: integer("sandbox_drop_next").notNull().default(0),
    /** Raised by every change a reader can see (a trigger, in the same statement); the ETag is built from it. */
    version: integer("version").notNull().default(1),
    /** Conditions on an event's envelope, all of which it must meet to be delivered here; null: none. */
    filters: text("filters", { mode: "json" }).$type<
      { path: string; in: (string | number | boolean | null)[] }[] | null
    >(),
    /** `full`: the envelope with `data`; `thin`: the envelope with `resource` and its ids only. */
    payload: text("payload", { enum: ["full", "thin"] })
      .notNull()
      .default("full"),
  },
  (t) => [index("webhook_endpoints_agency_page").on(t.agencyId, t.createdAt, t.id)],
);
export type WebhookEndpoint = typeof webhookEndpoints.$inferSelect;

/** One event for one endpoint: created once (unique per pair) when the outbox is drained. */
export const webhookDeliveries = sqliteTable(
  "webhook_deliveries",
  {
    id: text("id").primaryKey(),
    eventId: text("event_id").notNull(),
    endpointId: text("endpoint_id").notNull(),
    agencyId: text("agency_id").notNull(),
    status: text("status", { enum: ["pending", "delivered", "dead", "filtered"] })
      .notNull()
      .default("pending"),
    attempts: integer("attempts").notNull().default(0),
    lastResponseStatus: integer("last_response_status"),
    lastError: text("last_error"),
    deliveredAt: text("delivered_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    /** When the dashboard last queued it again: the retry schedule restarts there. */
    replayedAt: text("replayed_at"),
    /** Until when one consumer's attempt holds the delivery, so a duplicate message waits. */
    leasedUntil: text("leased_until"),
    /** The replay that sent it again (`rpl_…`); null for the delivery made when the event happened. */
    replayId: text("replay_id"),
  },
  (t) => [
    // One live delivery per event and endpoint, and one per event in each replay.
    uniqueIndex("webhook_deliveries_event_endpoint").on(t.eventId, t.endpointId).where(sql`${t.replayId} IS NULL`),
    uniqueIndex("webhook_deliveries_replay_event")
      .on(t.eventId, t.endpointId, t.replayId)
      .where(sql`${t.replayId} IS NOT NULL`),
    index("webhook_deliveries_agency").on(t.agencyId, t.createdAt),
    // The delivery log of one endpoint, all of it or by status.
    index("webhook_deliveries_endpoint_page").on(t.endpointId, t.createdAt, t.id),
    index("webhook_deliveries_endpoint_status_page").on(t.endpointId, t.status, t.createdAt, t.id),
    // Settled deliveries by age, for the retention sweep (and pending ones for the stale sweep).
    index("webhook_deliveries_status_updated").on(t.status, t.updatedAt),
  ],
);

/** Every delivery attempt: when, how long, what the receiver answered. */
export const webhookDeliveryAttempts = sqliteTable(
  "webhook_delivery_attempts",
  {
    id: text("id").primaryKey(),
    deliveryId: text("delivery_id")
      .notNull()
      .references(() => webhookDeliveries.id),
    attempt: integer("attempt").notNull(),
    attemptedAt: text("attempted_at").notNull(),
    responseStatus: integer("response_status"),
    latencyMs: integer("latency_ms").notNull(),
    error: text("error"),
  },
  (t) => [index("webhook_delivery_attempts_delivery").on(t.deliveryId, t.attempt)],
);
export type WebhookDelivery = typeof webhookDeliveries.$inferSelect;

/**
 * A range of an agency's events sent again to one endpoint, in sequence order, by its
 * `WebhookReplayer`. At most one runs per endpoint (a partial unique index). `cursor` is the
 * last sequence handed to delivery; `events_total` counts the range's events of the
 * endpoint's types, each ending sent or skipped (filtered out, or delivered already when
 * only failed ones are asked for).
 */
export const webhookReplays = sqliteTable(
  "webhook_replays",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull(),
    endpointId: text("endpoint_id").notNull(),
    status: text("status", { enum: ["running", "done", "cancelled"] })
      .notNull()
      .default("running"),
    fromSequence: integer("from_sequence").notNull(),
    toSequence: integer("to_sequence").notNull(),
    onlyFailed: integer("only_failed", { mode: "boolean" }).notNull().default(false),
    cursor: integer("cursor").notNull(),
    eventsTotal: integer("events_total").notNull(),
    eventsSent: integer("events_sent").notNull().default(0),
    eventsSkipped: integer("events_skipped").notNull().default(0),
    /** Why it stopped early: the endpoint was removed, or the caller cancelled it. */
    reason: text("reason"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
    finishedAt: text("finished_at"),
  },
  (t) => [
    uniqueIndex("webhook_replays_running").on(t.endpointId).where(sql`${t.status} = 'running'`),
    index("webhook_replays_agency_page").on(t.agencyId, t.createdAt, t.id),
    // The retention sweep takes finished replays by age.
    index("webhook_replays_finished").on(t.finishedAt),
  ],
);
export type WebhookReplay = typeof webhookReplays.$inferSelect;
export type WebhookDeliveryAttempt = typeof webhookDeliveryAttempts.$inferSelect;

/** Payment-provider events already applied (by the provider's event id): a redelivery changes nothing. */
export const providerEvents = sqliteTable(
  "provider_events",
  {
    id: text("id").primaryKey(),
    provider: text("provider").notNull(),
    type: text("type").notNull(),
    receivedAt: text("received_at").notNull().default(now),
  },
  (t) => [index("provider_events_received").on(t.receivedAt)],
);

/**
 * An agency's platform subscription at the payment provider, as its verified events (or the
 * sandbox's helpers) reported it. The id is the provider's (`sub_…`); `cancelled_at` is set
 * once, by the first event that ends it, which alone emits `subscription.cancelled`.
 */
export const subscriptions = sqliteTable(
  "subscriptions",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    /** The provider's status at the last change (`active`, `trialing`, …), `cancelled` once ended. */
    status: text("status").notNull(),
    plan: text("plan"),
    startedAt: text("started_at"),
    cancelledAt: text("cancelled_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("subscriptions_agency").on(t.agencyId)],
);
export type Subscription = typeof subscriptions.$inferSelect;

/**
 * A user's external calendar. Credentials (OAuth tokens or the feed URL) are stored sealed under the
 * keyring (domain/sealed-columns.ts); a sandbox calendar has none (empty).
 */
export const calendarConnections = sqliteTable(
  "calendar_connections",
  {
    id: text("id").primaryKey(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    agencyId: text("agency_id").notNull(),
    /** `sandbox`: a calendar of the sandbox whose busy blocks the test helpers write (see sandboxCalendarBlocks). */
    provider: text("provider", { enum: ["google", "ics", "sandbox"] }).notNull(),
    calendarId: text("calendar_id"),
    credentialsSealed: text("credentials_sealed").notNull(),
    /** What the last reconciliation got from the provider: null when it answered, else the failure. */
    lastError: text("last_error"),
    lastCheckedAt: text("last_checked_at"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    index("calendar_connections_agency_rows").on(t.agencyId, t.id),
    uniqueIndex("calendar_connections_user").on(t.userId),
  ],
);
export type CalendarConnection = typeof calendarConnections.$inferSelect;

/**
 * The busy blocks of a sandbox calendar (a connection with provider `sandbox`), by the
 * calendar event id that appointments and tours refer to; one per user and event id.
 */
export const sandboxCalendarBlocks = sqliteTable(
  "sandbox_calendar_blocks",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull(),
    userId: text("user_id")
      .notNull()
      .references(() => users.id),
    eventId: text("event_id").notNull(),
    startsAt: text("starts_at").notNull(),
    endsAt: text("ends_at").notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    index("sandbox_calendar_blocks_agency_rows").on(t.agencyId, t.id),
    uniqueIndex("sandbox_calendar_blocks_event").on(t.userId, t.eventId),
    index("sandbox_calendar_blocks_user").on(t.userId, t.startsAt),
  ],
);
export type SandboxCalendarBlock = typeof sandboxCalendarBlocks.$inferSelect;

/**
 * An open discrepancy between a stored calendar event and the calendar: reported once
 * while it lasts. The partial unique index allows one open row per subject and kind, so
 * two concurrent runs cannot both report it; resolved rows are kept as history.
 */
export const calendarDiscrepancies = sqliteTable(
  "calendar_discrepancies",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull(),
    subjectType: text("subject_type", { enum: ["appointment", "tour"] }).notNull(),
    subjectId: text("subject_id").notNull(),
    kind: text("kind", { enum: ["missing", "moved", "malformed"] }).notNull(),
    detectedAt: text("detected_at").notNull().default(now),
    resolvedAt: text("resolved_at"),
  },
  (t) => [
    index("calendar_discrepancies_agency_rows").on(t.agencyId, t.id),
    uniqueIndex("calendar_discrepancies_open")
      .on(t.subjectType, t.subjectId, t.kind)
      .where(sql`${t.resolvedAt} IS NULL`),
    index("calendar_discrepancies_detected").on(t.detectedAt),
  ],
);

/** Where a bounded background job resumes: its next run continues after `position`. */
export const jobCursors = sqliteTable("job_cursors", {
  name: text("name").primaryKey(),
  /** Null when the job starts over from the beginning. */
  position: text("position"),
  updatedAt: updatedAt(),
});

/**
 * What an agency stores, per resource (`tours`, `tour_bytes`, …): rows, or bytes of the
 * fields a client chooses the size of. Kept exact by triggers on each resource table (the
 * agency_quotas migration), so it changes in the same statement as the rows it counts.
 */
export const agencyUsage = sqliteTable(
  "agency_usage",
  {
    agencyId: text("agency_id").notNull(),
    resource: text("resource").notNull(),
    used: integer("used").notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.agencyId, t.resource] })],
);

/** The quota of each resource for an agency without an override; the triggers read it. */
export const quotaDefaults = sqliteTable("quota_defaults", {
  resource: text("resource").primaryKey(),
  quota: integer("quota").notNull(),
});

/** An agency's own quota for a resource, in place of the default (set by the platform). */
export const agencyQuotas = sqliteTable(
  "agency_quotas",
  {
    agencyId: text("agency_id")
      .notNull()
      .references(() => agencies.id),
    resource: text("resource").notNull(),
    quota: integer("quota").notNull(),
    updatedAt: updatedAt(),
  },
  (t) => [primaryKey({ columns: [t.agencyId, t.resource] })],
);
