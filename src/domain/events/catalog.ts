import { z } from "zod";

const ts = (description: string) =>
  z.string().meta({ description: `${description} ISO 8601 UTC.`, example: "2026-11-22T15:30:00.000Z" });
const listingNumber = z
  .string()
  .regex(/^[a-z0-9]{7}$/, "7 lowercase letters or digits")
  .meta({ description: "The listing's identifier.", example: "k3v9x2a" });
const appointmentId = z.string().meta({ example: "apt_0mhx3k2a1q8v2l0c9z7rj4" });
const userId = z.string().meta({ example: "usr_0mhx3k2a1q8v2l0c9z7rj4" });
const deliveryId = z.string().meta({ example: "dlv_0mhx3k2a1q8v2l0c9z7rj4" });

/**
 * The 17 public event types. Each schema builds the event's `data` (payloads are parsed
 * through it before they are written), and is published as the catalog's
 * `payload_schema` and in the OpenAPI `webhooks` section.
 */
export const EVENT_TYPES = {
  "appointment.scheduled": {
    category: "Appointment",
    apiVersion: "2026-11-01",
    description: "A shoot appointment was scheduled on the agency's external calendar (order form, dashboard or API).",
    data: z.object({
      appointment_id: appointmentId,
      listing_number: listingNumber,
      starts_at: ts("Start of the shoot."),
      ends_at: ts("End of the shoot."),
      source: z.enum(["order_form", "dashboard", "api"]),
    }),
  },
  "appointment.rescheduled": {
    category: "Appointment",
    apiVersion: "2026-11-01",
    description: "An appointment moved to a new date and time.",
    data: z.object({
      appointment_id: appointmentId,
      listing_number: listingNumber,
      previous_starts_at: ts("Previous start."),
      previous_ends_at: ts("Previous end."),
      starts_at: ts("New start."),
      ends_at: ts("New end."),
    }),
  },
  "appointment.cancelled": {
    category: "Appointment",
    apiVersion: "2026-11-01",
    description: "An appointment was cancelled (dashboard, API, or as a side effect of listing cancellation).",
    data: z.object({
      appointment_id: appointmentId,
      listing_number: listingNumber,
      starts_at: ts("Start of the cancelled shoot."),
      reason: z.enum(["dashboard", "api", "listing_cancelled"]),
    }),
  },
  "appointment.orphan.detected": {
    category: "Appointment",
    apiVersion: "2026-11-01",
    description:
      "A tour's stored calendar event cannot be reconciled with the agency's calendar (missing, moved or malformed).",
    data: z.object({
      subject_type: z.enum(["appointment", "tour"]),
      subject_id: z.string().meta({ example: "apt_0mhx3k2a1q8v2l0c9z7rj4" }),
      calendar_event_id: z.string().meta({ example: "shoot-0mhx3k2a1q8v2l0c9z7rj4" }),
      discrepancy: z.enum(["missing", "moved", "malformed"]),
      expected_starts_at: ts("Start the service holds.").nullable(),
      calendar_starts_at: ts("Start the calendar holds.").nullable(),
    }),
  },
  "invoice.payment_made": {
    category: "Billing",
    apiVersion: "2026-11-01",
    description: "An invoice at the payment provider became paid.",
    data: z.object({
      invoice_id: z.string().meta({ example: "in_1QxYz2" }),
      listing_number: listingNumber.nullable(),
      amount_minor: z.number().int().meta({ description: "Amount in the currency's minor unit.", example: 24900 }),
      currency: z.string().meta({ example: "usd" }),
      provider_reference: z.string().meta({ example: "in_1QxYz2" }),
      paid_at: ts("When the invoice was paid."),
    }),
  },
  "subscription.created": {
    category: "Billing",
    apiVersion: "2026-11-01",
    description: "An agency started a platform subscription.",
    data: z.object({
      subscription_id: z.string().meta({ example: "sub_1QxYz2" }),
      plan: z.string().nullable().meta({ example: "Pro monthly" }),
      status: z.string().meta({ example: "active" }),
      started_at: ts("Start of the subscription."),
    }),
  },
  "subscription.cancelled": {
    category: "Billing",
    apiVersion: "2026-11-01",
    description: "An agency cancelled its subscription.",
    data: z.object({
      subscription_id: z.string().meta({ example: "sub_1QxYz2" }),
      cancelled_at: ts("When the subscription ended."),
    }),
  },
  "listing.created": {
    category: "Listing",
    apiVersion: "2026-11-01",
    description: "A listing was created via API or dashboard.",
    data: z.object({
      listing_number: listingNumber,
      status: z.string().meta({ example: "Coming Soon" }),
      address: z.string().meta({ example: "12 Harbour Street, Portside" }),
      public_url: z.string().meta({ example: "https://listings.example.com/property/k3v9x2a" }),
      created_at: ts("Creation time."),
    }),
  },
  "listing.updated": {
    category: "Listing",
    apiVersion: "2026-11-01",
    description: "Listing metadata changed (address, agents, selected property-data sub-fields).",
    data: z.object({
      listing_number: listingNumber,
      changed_fields: z.array(z.string()).meta({ example: ["address"] }),
      address: z.string().meta({ example: "14 Harbour Street, Portside" }),
      owner_user_id: userId,
      agent_one_id: userId,
      agent_two_id: userId.nullable(),
    }),
  },
  "listing.status_changed": {
    category: "Listing",
    apiVersion: "2026-11-01",
    description: "A listing's status transitioned.",
    data: z.object({
      listing_number: listingNumber,
      status: z.string().meta({ example: "Sold" }),
      previous_status: z.string().meta({ example: "Active" }),
    }),
  },
  "listing.cancelled": {
    category: "Listing",
    apiVersion: "2026-11-01",
    description: "A listing was cancelled via API or dashboard.",
    data: z.object({
      listing_number: listingNumber,
      status: z.literal("Cancelled"),
      previous_status: z.string().meta({ example: "Coming Soon" }),
      reason: z.string().nullable().meta({ example: "Seller withdrew" }),
      source: z.enum(["api", "dashboard"]),
      cancelled_at: ts("When the listing was cancelled."),
    }),
  },
  "listing.section_modified": {
    category: "Listing",
    apiVersion: "2026-11-01",
    description: "Atomic update to a section (gallery, home, features, documents, matterport, floorplan).",
    data: z.object({
      listing_number: listingNumber,
      section: z.enum(["gallery", "home", "features", "documents", "matterport", "floorplan"]),
      operation: z.string().meta({ example: "append" }),
    }),
  },
  "media.delivery.completed": {
    category: "Media",
    apiVersion: "2026-11-01",
    description:
      "Delivery of listing media to the agent's cloud storage finished. A partial success (summary.files_failed " +
      "greater than 0) still counts as completed.",
    data: z.object({
      delivery_id: deliveryId,
      listing_number: listingNumber,
      summary: z.object({
        files_total: z.number().int().meta({ example: 3 }),
        files_delivered: z.number().int().meta({ example: 2 }),
        files_failed: z.number().int().meta({ example: 1 }),
        failed: z.array(
          z.object({
            upload_id: z.string().meta({ example: "upl_0mhx3k2a1q8v2l0c9z7rj4" }),
            filename: z.string().nullable().meta({ example: "front-elevation.jpg" }),
            error: z.string().meta({ example: "destination answered 403" }),
          }),
        ),
      }),
    }),
  },
  "media.delivery.failed": {
    category: "Media",
    apiVersion: "2026-11-01",
    description: "Delivery failed after all retries; no files were uploaded.",
    data: z.object({
      delivery_id: deliveryId,
      listing_number: listingNumber,
      attempts: z.number().int().meta({ example: 5 }),
      error: z.string().meta({ example: "destination answered 403" }),
    }),
  },
  "user.signed_up": {
    category: "User",
    apiVersion: "2026-11-01",
    description: "A user was provisioned under an agency hierarchy (admin create or invite).",
    data: z.object({
      user_id: userId,
      role: z.string().meta({ example: "agent" }),
      managerId: userId.nullable(),
      source: z.enum(["admin_create", "invite"]),
    }),
  },
  "user.hierarchy_changed": {
    category: "User",
    apiVersion: "2026-11-01",
    description:
      "A user's managerId changed, inside an agency or across agencies. Emitted scoped to the new owning agency.",
    data: z.object({
      user_id: userId,
      managerId: userId.nullable(),
      previous_manager_id: z
        .string()
        .nullable()
        .meta({
          example: "usr_0mhx3k2a1q8v2l0c9z7rj3",
          description:
            "The manager before the change, null at the top. Null too when the user came from another agency " +
            "(`agency_changed` true): an event never names the users of an agency other than its receiver.",
        }),
      agency_changed: z
        .boolean()
        .meta({ description: "True when the user moved to another agency (this one).", example: false }),
    }),
  },
  "user.deactivated": {
    category: "User",
    apiVersion: "2026-11-01",
    description: "A user was deactivated (is_active false) or suspended through admin user management.",
    data: z.object({ user_id: userId, reason: z.enum(["deactivated", "suspended"]) }),
  },
} as const;

export type EventType = keyof typeof EVENT_TYPES;
export type EventData<T extends EventType> = z.infer<(typeof EVENT_TYPES)[T]["data"]>;
export const EVENT_TYPE_NAMES = Object.keys(EVENT_TYPES) as EventType[];
