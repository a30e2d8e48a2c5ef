import { z } from "@hono/zod-openapi";
import type { Appointment } from "../../db/schema";
import { json } from "../../http/route";
import { listingParams } from "../listings/schema";

export const appointmentParams = listingParams.extend({ appointment_id: z.string() });

const AppointmentSchema = z
  .object({
    id: z.string(),
    listing_number: z.string(),
    status: z.enum(["scheduled", "cancelled"]),
    starts_at: z.string(),
    ends_at: z.string(),
    calendar_event_id: z.string().nullable(),
  })
  .openapi("Appointment");

export const presentAppointment = (a: Appointment, listingNumber: string) => ({
  id: a.id,
  listing_number: listingNumber,
  status: a.status,
  starts_at: a.startsAt,
  ends_at: a.endsAt,
  calendar_event_id: a.calendarEventId,
});

export const appointmentAnswer = (status: 200 | 201, description: string) =>
  ({ [status]: { description, content: json(AppointmentSchema) } }) as const;
