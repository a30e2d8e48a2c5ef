import { type RouteHandler, z } from "@hono/zod-openapi";
import { rescheduleAppointment } from "../../domain/appointments";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { appointmentOfListing } from "./cancel-appointment";
import {
  AppointmentSchema,
  appointmentParams,
  helperGuard,
  instant,
  presentAppointment,
  TEST_HELPERS_TAG,
} from "./schema";

export const rescheduleAppointmentRoute = publicRoute(
  helperGuard("listings:write", [
    "listing_not_found",
    "appointment_not_found",
    "appointment_not_scheduled",
    "invalid_appointment_time",
  ]),
  {
    method: "post",
    path: "/api/v1/test_helpers/listings/{listing_number}/appointments/{appointment_id}/reschedule",
    operationId: "testHelperRescheduleAppointment",
    tags: [TEST_HELPERS_TAG],
    summary: "Move a shoot appointment (emits appointment.rescheduled)",
    description:
      "What the dashboard does when a shoot moves. A cancelled appointment cannot move (409 " +
      "`appointment_not_scheduled`).",
    request: {
      params: appointmentParams,
      body: {
        content: json(
          z.strictObject({
            starts_at: instant("New start of the shoot.", "2026-12-03T17:00:00Z"),
            ends_at: instant("New end of the shoot; after `starts_at`.", "2026-12-03T19:00:00Z"),
          }),
        ),
      },
    },
    responses: { 200: { description: "The appointment.", content: json(AppointmentSchema) } },
  },
);

export const rescheduleAppointmentHandler: RouteHandler<typeof rescheduleAppointmentRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const b = c.req.valid("json");
  const { listing, appointment } = await appointmentOfListing(db, c.get("caller").agencyId, c.req.valid("param"));
  const moved = await rescheduleAppointment(
    db,
    listing,
    appointment,
    { startsAt: b.starts_at, endsAt: b.ends_at },
    idempotencyMark(c, db, { status: 200, resourceType: "appointment", resourceId: appointment.id }),
  );
  return c.json(AppointmentSchema.parse(presentAppointment(moved, listing.listingNumber)), 200);
};
