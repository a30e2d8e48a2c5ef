import { OpenAPIHono, z } from "@hono/zod-openapi";
import { database } from "../db/client";
import type { Appointment } from "../db/schema";
import { cancelAppointment, getAppointment, rescheduleAppointment, scheduleAppointment } from "../domain/appointments";
import { activateListing, cancelListing, editListing, findListing } from "../domain/listings";
import { recordOrder } from "../domain/orders";
import type { AppEnv } from "../http/env";
import { internalRoute } from "../http/route";
import { validationHook } from "../http/validation";
import { ListingSchema, presentListing } from "../schemas/listings";
import { OrderSchema, presentOrder } from "../schemas/orders";

const listingParams = z.object({ agency_id: z.string(), listing_number: z.string() });
const appointmentParams = listingParams.extend({ appointment_id: z.string() });
const instant = z.iso.datetime({ offset: true });
const listingAnswer = (description: string) =>
  ({ 200: { description, content: { "application/json": { schema: ListingSchema } } } }) as const;

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
const presentAppointment = (a: Appointment, listingNumber: string) => ({
  id: a.id,
  listing_number: listingNumber,
  status: a.status,
  starts_at: a.startsAt,
  ends_at: a.endsAt,
  calendar_event_id: a.calendarEventId,
});
const appointmentAnswer = (status: 200 | 201, description: string) =>
  ({ [status]: { description, content: { "application/json": { schema: AppointmentSchema } } } }) as const;

const activate = internalRoute(["listing_not_found"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/activate",
  operationId: "activateListing",
  tags: ["Listings"],
  summary: "Activate a listing (credit captured)",
  request: { params: listingParams },
  responses: listingAnswer("The activated listing."),
});

const edit = internalRoute(["listing_not_found", "agent_not_in_hierarchy"], {
  method: "patch",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}",
  operationId: "editListing",
  tags: ["Listings"],
  summary: "Edit a listing's address or agents (emits listing.updated)",
  request: {
    params: listingParams,
    body: {
      content: {
        "application/json": {
          schema: z.strictObject({
            address: z.string().trim().min(1).max(300).optional(),
            owner_user_id: z.string().optional(),
            agent_one_id: z.string().optional(),
            agent_two_id: z.string().nullable().optional(),
          }),
        },
      },
    },
  },
  responses: listingAnswer("The listing."),
});

const cancel = internalRoute(["listing_not_found", "listing_already_cancelled"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/cancel",
  operationId: "cancelListingFromDashboard",
  tags: ["Listings"],
  summary: "Cancel a listing from the dashboard, also past the no-fee window",
  request: {
    params: listingParams,
    body: { content: { "application/json": { schema: z.strictObject({ reason: z.string().max(500).optional() }) } } },
  },
  responses: listingAnswer("The cancelled listing."),
});

const order = internalRoute(["listing_not_found", "order_already_recorded"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/orders",
  operationId: "recordOrder",
  tags: ["Listings"],
  summary: "Record an invoice or a payment for a listing",
  request: {
    params: listingParams,
    body: {
      content: {
        "application/json": {
          schema: z.strictObject({
            type: z.enum(["invoice", "payment"]),
            amount_minor: z.number().int().min(0),
            currency: z.string().regex(/^[A-Za-z]{3}$/),
            status: z.string().min(1).max(40),
            provider_reference: z.string().max(200).optional(),
            invoice_id: z.string().optional(),
            issued_at: instant.optional(),
            paid_at: instant.optional(),
          }),
        },
      },
    },
  },
  responses: { 201: { description: "The recorded order.", content: { "application/json": { schema: OrderSchema } } } },
});

const schedule = internalRoute(["listing_not_found", "listing_already_cancelled", "invalid_appointment_time"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/appointments",
  operationId: "scheduleAppointment",
  tags: ["Appointments"],
  summary: "Schedule a shoot appointment (emits appointment.scheduled)",
  request: {
    params: listingParams,
    body: {
      content: {
        "application/json": {
          schema: z.strictObject({
            starts_at: instant,
            ends_at: instant,
            calendar_event_id: z.string().max(300).optional(),
            source: z.enum(["order_form", "dashboard"]).optional(),
          }),
        },
      },
    },
  },
  responses: appointmentAnswer(201, "The appointment."),
});

const reschedule = internalRoute(
  ["listing_not_found", "appointment_not_found", "appointment_not_scheduled", "invalid_appointment_time"],
  {
    method: "patch",
    path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/appointments/{appointment_id}",
    operationId: "rescheduleAppointment",
    tags: ["Appointments"],
    summary: "Move a shoot appointment (emits appointment.rescheduled)",
    request: {
      params: appointmentParams,
      body: { content: { "application/json": { schema: z.strictObject({ starts_at: instant, ends_at: instant }) } } },
    },
    responses: appointmentAnswer(200, "The appointment."),
  },
);

const cancelAppt = internalRoute(["listing_not_found", "appointment_not_found", "appointment_not_scheduled"], {
  method: "post",
  path: "/internal/v1/agencies/{agency_id}/listings/{listing_number}/appointments/{appointment_id}/cancel",
  operationId: "cancelAppointment",
  tags: ["Appointments"],
  summary: "Cancel a shoot appointment (emits appointment.cancelled)",
  request: { params: appointmentParams },
  responses: appointmentAnswer(200, "The appointment."),
});

export const listingsInternal = new OpenAPIHono<AppEnv>({ defaultHook: validationHook })
  .openapi(activate, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    return c.json(
      presentListing(await activateListing(db, await findListing(db, p.agency_id, p.listing_number)), c.env.SITE_URL),
      200,
    );
  })
  .openapi(edit, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    const b = c.req.valid("json");
    const listing = await findListing(db, p.agency_id, p.listing_number);
    const updated = await editListing(db, listing, {
      address: b.address,
      ownerUserId: b.owner_user_id,
      agentOneId: b.agent_one_id,
      agentTwoId: b.agent_two_id,
    });
    return c.json(presentListing(updated, c.env.SITE_URL), 200);
  })
  .openapi(cancel, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    const listing = await findListing(db, p.agency_id, p.listing_number);
    return c.json(
      presentListing(
        await cancelListing(db, listing, { reason: c.req.valid("json").reason, source: "dashboard" }),
        c.env.SITE_URL,
      ),
      200,
    );
  })
  .openapi(order, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    const b = c.req.valid("json");
    const listing = await findListing(db, p.agency_id, p.listing_number);
    const recorded = await recordOrder(db, listing, {
      kind: b.type,
      amountMinor: b.amount_minor,
      currency: b.currency,
      status: b.status,
      providerReference: b.provider_reference,
      invoiceId: b.invoice_id,
      issuedAt: b.issued_at ? new Date(b.issued_at).toISOString() : null,
      paidAt: b.paid_at ? new Date(b.paid_at).toISOString() : null,
    });
    return c.json(presentOrder(recorded), 201);
  })
  .openapi(schedule, async (c) => {
    const db = database(c.env.DB);
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
  })
  .openapi(reschedule, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    const b = c.req.valid("json");
    const listing = await findListing(db, p.agency_id, p.listing_number);
    const a = await rescheduleAppointment(db, listing, await getAppointment(db, listing.agencyId, p.appointment_id), {
      startsAt: b.starts_at,
      endsAt: b.ends_at,
    });
    return c.json(presentAppointment(a, listing.listingNumber), 200);
  })
  .openapi(cancelAppt, async (c) => {
    const db = database(c.env.DB);
    const p = c.req.valid("param");
    const listing = await findListing(db, p.agency_id, p.listing_number);
    const a = await cancelAppointment(
      db,
      listing,
      await getAppointment(db, listing.agencyId, p.appointment_id),
      "dashboard",
    );
    return c.json(presentAppointment(a, listing.listingNumber), 200);
  });
