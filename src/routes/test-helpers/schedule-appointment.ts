import { type RouteHandler, z } from "@hono/zod-openapi";
import { scheduleAppointment } from "../../domain/appointments";
import { findListing } from "../../domain/listings/reads";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { listingNumberParam } from "../../schemas/listings";
import { AppointmentSchema, helperGuard, instant, presentAppointment, TEST_HELPERS_TAG } from "./schema";

export const scheduleAppointmentRoute = publicRoute(
  helperGuard("listings:write", [
    "listing_not_found",
    "listing_already_cancelled",
    "invalid_appointment_time",
    "agency_quota_exceeded",
  ]),
  {
    method: "post",
    path: "/api/v1/test_helpers/listings/{listing_number}/appointments",
    operationId: "testHelperScheduleAppointment",
    tags: [TEST_HELPERS_TAG],
    summary: "Schedule a shoot appointment (emits appointment.scheduled)",
    description:
      "What the order form or the dashboard does when a shoot is booked for the listing. A scheduled shoot also " +
      "closes the listing's no-fee cancellation window `cancellation_notice_hours` before it starts. With " +
      "`calendar_event_id`, calendar reconciliation checks that event on the calendar of the listing's first agent " +
      "(`POST /api/v1/test_helpers/calendar/reconcile`).",
    request: {
      params: listingNumberParam,
      body: {
        content: json(
          z.strictObject({
            starts_at: instant("Start of the shoot.", "2026-12-02T17:00:00Z"),
            ends_at: instant("End of the shoot; after `starts_at`.", "2026-12-02T19:00:00Z"),
            calendar_event_id: z
              .string()
              .min(1)
              .max(300)
              .optional()
              .openapi({ description: "The event on the calendar that holds the shoot.", example: "busy_shoot_1" }),
            source: z.enum(["order_form", "dashboard"]).default("dashboard").openapi({
              description: "Where the booking came from; `dashboard` when omitted.",
              example: "order_form",
            }),
          }),
        ),
      },
    },
    responses: { 201: { description: "The appointment.", content: json(AppointmentSchema) } },
  },
);

export const scheduleAppointmentHandler: RouteHandler<typeof scheduleAppointmentRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const b = c.req.valid("json");
  const listing = await findListing(db, c.get("caller").agencyId, c.req.valid("param").listing_number);
  const appointment = await scheduleAppointment(
    db,
    listing,
    { startsAt: b.starts_at, endsAt: b.ends_at, calendarEventId: b.calendar_event_id, source: b.source },
    ({ id }) => idempotencyMark(c, db, { status: 201, resourceType: "appointment", resourceId: id }),
  );
  return c.json(AppointmentSchema.parse(presentAppointment(appointment, listing.listingNumber)), 201);
};
