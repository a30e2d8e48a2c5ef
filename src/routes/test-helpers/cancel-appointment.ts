import type { RouteHandler } from "@hono/zod-openapi";
import type { Db } from "../../db/client";
import { cancelAppointment, getAppointment } from "../../domain/appointments";
import { findListing } from "../../domain/listings/reads";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { DomainError } from "../../lib/errors";
import { AppointmentSchema, appointmentParams, helperGuard, presentAppointment, TEST_HELPERS_TAG } from "./schema";

/** An appointment of the agency's listing; one of another listing is `appointment_not_found`. */
export async function appointmentOfListing(
  db: Db,
  agencyId: string,
  p: { listing_number: string; appointment_id: string },
) {
  const listing = await findListing(db, agencyId, p.listing_number);
  const appointment = await getAppointment(db, agencyId, p.appointment_id);
  if (appointment.listingId !== listing.id) throw new DomainError("appointment_not_found");
  return { listing, appointment };
}

export const cancelAppointmentRoute = publicRoute(
  helperGuard("listings:write", ["listing_not_found", "appointment_not_found", "appointment_not_scheduled"]),
  {
    method: "post",
    path: "/api/v1/test_helpers/listings/{listing_number}/appointments/{appointment_id}/cancel",
    operationId: "testHelperCancelAppointment",
    tags: [TEST_HELPERS_TAG],
    summary: "Cancel a shoot appointment (emits appointment.cancelled)",
    description:
      "What the dashboard does when a shoot is cancelled (`reason`: `dashboard`). Cancelling it again is 409 " +
      "`appointment_not_scheduled`. Cancelling the listing (`POST /api/v1/listings/{listing_number}/cancel`) " +
      "cancels its shoots too, with `reason` `listing_cancelled`.",
    request: { params: appointmentParams },
    responses: { 200: { description: "The cancelled appointment.", content: json(AppointmentSchema) } },
  },
);

export const cancelAppointmentHandler: RouteHandler<typeof cancelAppointmentRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const { listing, appointment } = await appointmentOfListing(db, c.get("caller").agencyId, c.req.valid("param"));
  const cancelled = await cancelAppointment(
    db,
    listing,
    appointment,
    "dashboard",
    idempotencyMark(c, db, { status: 200, resourceType: "appointment", resourceId: appointment.id }),
  );
  return c.json(AppointmentSchema.parse(presentAppointment(cancelled, listing.listingNumber)), 200);
};
