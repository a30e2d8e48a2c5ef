import { z } from "@hono/zod-openapi";
import type { Appointment } from "../../db/schema";
import { DEFAULT_SCOPES, type Scope } from "../../domain/roles";
import { TEST_HELPERS_TAG } from "../../http/openapi/tags";
import type { Guard } from "../../http/registry";
import type { ErrorCode } from "../../lib/errors";

export { TEST_HELPERS_TAG };

/**
 * The guard of every test helper: sandbox only (in live the path does not exist), the
 * shared `test_helpers` budget, and the scope of what the helper changes.
 */
export const helperGuard = (scope: Scope, errors: readonly ErrorCode[] = []): Guard => ({
  endpoint: "test_helpers",
  scope,
  errors,
  sandboxOnly: true,
});

/**
 * The guard of a helper that changes what the API itself only reads (users, billing,
 * calendars): the scope that reads that data, then every other scope but `admin`. A read
 * scope never writes, so only a key that may do everything the API allows stands in for
 * the dashboard, the payment provider or the calendar.
 */
export const outsideHelperGuard = (readScope: Scope, errors: readonly ErrorCode[] = []): Guard => ({
  ...helperGuard(readScope, errors),
  alsoScopes: DEFAULT_SCOPES.filter((s) => s !== readScope),
});

export const instant = (description: string, example: string) =>
  z.iso
    .datetime({ offset: true })
    .openapi({ description: `${description} ISO 8601 with \`Z\` or an offset.`, example });

export const userIdParam = z.object({
  user_id: z.string().openapi({ description: "A user of your agency.", example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
});

export const appointmentParams = z.object({
  listing_number: z.string().openapi({ description: "The listing's identifier.", example: "k3v9x2a" }),
  appointment_id: z.string().openapi({ description: "The appointment's id.", example: "apt_0mhx3k2a1q8v2l0c9z7rj4" }),
});

export const AppointmentSchema = z.object({
  id: z.string().openapi({ example: "apt_0mhx3k2a1q8v2l0c9z7rj4" }),
  listing_number: z.string().openapi({ example: "k3v9x2a" }),
  status: z.enum(["scheduled", "cancelled"]),
  starts_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-12-02T17:00:00.000Z" }),
  ends_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-12-02T19:00:00.000Z" }),
  calendar_event_id: z.string().nullable().openapi({
    description: "The event on the calendar that holds the shoot; calendar reconciliation checks it.",
    example: "busy_0mhx3k2a1q8v2l0c9z7rj4",
  }),
});

export const presentAppointment = (a: Appointment, listingNumber: string): z.infer<typeof AppointmentSchema> => ({
  id: a.id,
  listing_number: listingNumber,
  status: a.status,
  starts_at: a.startsAt,
  ends_at: a.endsAt,
  calendar_event_id: a.calendarEventId,
});

/** What applying a Stripe-format event did. */
export const StripeEventSchema = z.object({
  id: z.string().openapi({ description: "The Stripe-format event's id.", example: "evt_3k2a1q8v2l0c9z7rj4mhx0ab" }),
  type: z.string().openapi({ example: "invoice.paid" }),
  outcome: z.enum(["applied", "duplicate", "ignored"]).openapi({
    description:
      "`applied`: recorded, and its event emitted. `duplicate`: this event id was applied before. `ignored`: it " +
      "changed nothing (a subscription already started or ended), so nothing was emitted.",
    example: "applied",
  }),
});
