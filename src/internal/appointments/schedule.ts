import { type RouteHandler, z } from "@hono/zod-openapi";
import { scheduleAppointment } from "../../domain/appointments";
import { findListing } from "../../domain/listings/reads";
import type { AppEnv } from "../../http/env";
import { internalRoute, json } from "../../http/route";
import { instant, listingParams } from "../listings/schema";
import { appointmentAnswer, presentAppointment } from "./schema";

export const scheduleAppointmentRoute = internalRoute(
  ["listing_not_found", "listing_already_cancelled", "invalid_appointment_time", "agency_quota_exceeded"],
  {
    method: "post",
    path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/appointments",
    operationId: "scheduleAppointment",
    tags: ["Appointments"],
    summary: "Schedule a shoot appointment (emits appointment.scheduled)",
    request: {
      params: listingParams,
      body: {
        content: json(
          z.strictObject({
            starts_at: instant,
            ends_at: instant,
            calendar_event_id: z.string().max(300).optional(),
            source: z.enum(["order_form", "dashboard"]).optional(),
          }),
        ),
      },
    },
    responses: appointmentAnswer(201, "The appointment."),
  },
);

export const scheduleAppointmentHandler: RouteHandler<typeof scheduleAppointmentRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const p = c.req.valid("param");
  const b = c.req.valid("json");
  const listing = await findListing(db, p.agency_id, p.listing_number);
  const a = await scheduleAppointment(db, listing, {
    startsAt: b.starts_at,
    endsAt: b.ends_at,
    calendarEventId: b.calendar_event_id,
    source: b.source ?? "dashboard",
  });
  return c.json(presentAppointment(a, listing.listingNumber), 201);
};
