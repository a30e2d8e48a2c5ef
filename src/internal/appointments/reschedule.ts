import { type RouteHandler, z } from "@hono/zod-openapi";
import { getAppointment, rescheduleAppointment } from "../../domain/appointments";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { instant } from "../listings/schema";
import { appointmentAnswer, appointmentParams, presentAppointment } from "./schema";

export const rescheduleAppointmentRoute = internalRoute(
  ["listing_not_found", "appointment_not_found", "appointment_not_scheduled", "invalid_appointment_time"],
  {
    method: "patch",
    path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/appointments/{appointment_id}",
    operationId: "rescheduleAppointment",
    tags: ["Appointments"],
    summary: "Move a shoot appointment (emits appointment.rescheduled)",
    request: {
      params: appointmentParams,
      body: { content: json(z.strictObject({ starts_at: instant, ends_at: instant })) },
    },
    responses: appointmentAnswer(200, "The appointment."),
  },
);

export const rescheduleAppointmentHandler: RouteHandler<typeof rescheduleAppointmentRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const b = c.req.valid("json");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const a = await rescheduleAppointment(db, listing, await getAppointment(db, listing.agencyId, p.appointment_id), {
    startsAt: b.starts_at,
    endsAt: b.ends_at,
  });
  return c.json(presentAppointment(a, listing.listingNumber), 200);
};
