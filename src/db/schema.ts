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

export const users = sqliteTable(
  "users",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull().references(() => agencies.id),
    role: text("role").notNull(),
    managerId: text("manager_id"),
    name: text("name").notNull(),
    email: text("email").notNull(),
    isActive: integer("is_active", { mode: "boolean" }).notNull().default(true),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [
    uniqueIndex("users_email_unique").on(t.email),
    index("users_agency_page").on(t.agencyId, t.createdAt, t.id),
    index("users_manager").on(t.managerId),
  ],
);

export const apiKeys = sqliteTable(
  "api_keys",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull().references(() => agencies.id),
    mintedByUserId: text("minted_by_user_id").notNull().references(() => users.id),
    /** The caller role of every request made with this key: the minting user's role at minting. */
    role: text("role").notNull(),
    mode: text("mode", { enum: ["test", "live"] }).notNull(),
    name: text("name").notNull().default(""),
    scopes: text("scopes", { mode: "json" }).$type<string[]>().notNull(),
    isActive: integer("is_active", { mode: "boolean" }).notNull().default(true),
    revokedAt: text("revoked_at"),
    expiresAt: text("expires_at"),
    rotationStartedAt: text("rotation_started_at"),
    rateLimitOverrides: text("rate_limit_overrides", { mode: "json" }).$type<Record<string, number>>().notNull().default(sql`'{}'`),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("api_keys_agency").on(t.agencyId, t.createdAt, t.id)],
);

/**
 * Secrets of a key, stored only as SHA-256 hashes. A hash maps to its key forever; a
 * rotation supersedes the current secret (grace window) instead of deleting it.
 */
export const apiKeySecrets = sqliteTable(
  "api_key_secrets",
  {
    hash: text("hash").primaryKey(),
    keyId: text("key_id").notNull().references(() => apiKeys.id),
    prefix: text("prefix").notNull(),
    last4: text("last4").notNull(),
    createdAt: createdAt(),
    supersededAt: text("superseded_at"),
    deactivatedAt: text("deactivated_at"),
  },
  (t) => [index("api_key_secrets_key").on(t.keyId)],
);

export const sessions = sqliteTable(
  "sessions",
  {
    tokenHash: text("token_hash").primaryKey(),
    userId: text("user_id").notNull().references(() => users.id),
    expiresAt: text("expires_at").notNull(),
    revokedAt: text("revoked_at"),
    createdAt: createdAt(),
  },
  (t) => [index("sessions_user").on(t.userId)],
);

export const listings = sqliteTable(
  "listings",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull().references(() => agencies.id),
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
  },
  (t) => [
    uniqueIndex("listings_agency_number").on(t.agencyId, t.listingNumber),
    index("listings_agency_page").on(t.agencyId, t.createdAt, t.id),
    index("listings_agency_status_page").on(t.agencyId, t.status, t.createdAt, t.id),
  ],
);

/** Shoot appointments of a listing, held on the agency's external calendar. */
export const appointments = sqliteTable(
  "appointments",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull().references(() => agencies.id),
    listingId: text("listing_id").notNull().references(() => listings.id),
    status: text("status", { enum: ["scheduled", "cancelled"] }).notNull().default("scheduled"),
    startsAt: text("starts_at").notNull(),
    endsAt: text("ends_at").notNull(),
    calendarEventId: text("calendar_event_id"),
    createdAt: createdAt(),
    updatedAt: updatedAt(),
  },
  (t) => [index("appointments_listing").on(t.listingId, t.status, t.startsAt)],
);

/** Invoices and payments tied to a listing (the listing's orders). */
export const listingOrders = sqliteTable(
  "listing_orders",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull().references(() => agencies.id),
    listingId: text("listing_id").notNull().references(() => listings.id),
    kind: text("kind", { enum: ["invoice", "payment"] }).notNull(),
    invoiceId: text("invoice_id"),
    amountMinor: integer("amount_minor").notNull(),
    currency: text("currency").notNull(),
    status: text("status").notNull(),
    providerReference: text("provider_reference"),
    issuedAt: text("issued_at"),
    paidAt: text("paid_at"),
    createdAt: createdAt(),
  },
  (t) => [
    index("listing_orders_page").on(t.listingId, t.createdAt, t.id),
    uniqueIndex("listing_orders_provider_ref").on(t.kind, t.providerReference),
  ],
);

export const tours = sqliteTable(
  "tours",
  {
    id: text("id").primaryKey(),
    agencyId: text("agency_id").notNull().references(() => agencies.id),
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
  },
  (t) => [
    uniqueIndex("tours_agency_number").on(t.agencyId, t.tourNumber),
    index("tours_agency_page").on(t.agencyId, t.createdAt, t.id),
  ],
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
  },
  (t) => [index("events_pending").on(t.enqueuedAt, t.createdAt), index("events_agency").on(t.agencyId, t.createdAt)],
);

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
  },
  (t) => [primaryKey({ columns: [t.agencyId, t.idemKey] }), index("idempotency_marks_expiry").on(t.expiresAt)],
);
export type IdempotencyMark = typeof idempotencyMarks.$inferSelect;
