import type { RouteHandler } from "@hono/zod-openapi";
import { cancelAppointment, getAppointment } from "../../domain/appointments";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute } from "../../http/route";
import { appointmentAnswer, appointmentParams, presentAppointment } from "./schema";

export const cancelAppointmentRoute = internalRoute(
  ["listing_not_found", "appointment_not_found", "appointment_not_scheduled"],
  {
    method: "post",
    path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/appointments/{appointment_id}/cancel",
    operationId: "cancelAppointment",
    tags: ["Appointments"],
    summary: "Cancel a shoot appointment (emits appointment.cancelled)",
    request: { params: appointmentParams },
    responses: appointmentAnswer(200, "The appointment."),
  },
);

export const cancelAppointmentHandler: RouteHandler<typeof cancelAppointmentRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const appointment = await getAppointment(db, listing.agencyId, p.appointment_id);
  const a = await cancelAppointment(db, listing, appointment, "dashboard");
  return c.json(presentAppointment(a, listing.listingNumber), 200);
};
