import { and, eq, sql } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import { type Appointment, appointments, type Listing, listings } from "../db/schema";
import { DomainError } from "../lib/errors";
import { newId, nowIso } from "../lib/ids";
import { isNotNullViolation } from "./constraint";
import { outboxInsert, outboxInsertIfChanged } from "./events/outbox";
import { quotaRefusal } from "./quotas";

function checkTimes(startsAt: string, endsAt: string) {
  if (Date.parse(endsAt) <= Date.parse(startsAt))
    throw new DomainError("invalid_appointment_time", { details: { starts_at: startsAt, ends_at: endsAt } });
}

export async function getAppointment(db: Db, agencyId: string, id: string): Promise<Appointment> {
  const a = await db
    .select()
    .from(appointments)
    .where(and(eq(appointments.id, id), eq(appointments.agencyId, agencyId)))
    .get();
  if (!a) throw new DomainError("appointment_not_found");
  return a;
}

/**
 * The listing id to store, or NULL once the listing is cancelled: decided in the insert
 * itself, so a shoot is never booked on a listing a cancel has committed, and the NOT NULL
 * column makes such a booking fail with its whole batch (its event and mark included).
 */
const listingStillOpen = (listing: Listing) =>
  sql`(CASE WHEN EXISTS (SELECT 1 FROM ${listings} WHERE ${listings.id} = ${listing.id}
    AND ${listings.agencyId} = ${listing.agencyId} AND ${listings.status} <> 'Cancelled') THEN ${listing.id} END)`;

export async function scheduleAppointment(
  db: Db,
  listing: Listing,
  input: {
    startsAt: string;
    endsAt: string;
    calendarEventId?: string | null;
    source: "order_form" | "dashboard" | "api";
  },
  alsoWrite: (appointment: { id: string }) => BatchItem<"sqlite">[] = () => [],
): Promise<Appointment> {
  if (listing.status === "Cancelled") throw new DomainError("listing_already_cancelled");
  checkTimes(input.startsAt, input.endsAt);
  const id = newId("apt");
  const startsAt = new Date(input.startsAt).toISOString();
  const endsAt = new Date(input.endsAt).toISOString();
  const [[appointment]] = await db
    .batch([
      db
        .insert(appointments)
        .values({
          id,
          agencyId: listing.agencyId,
          listingId: listingStillOpen(listing),
          startsAt,
          endsAt,
          calendarEventId: input.calendarEventId ?? null,
        })
        .returning(),
      outboxInsert(db, listing.agencyId, "appointment.scheduled", {
        appointment_id: id,
        listing_number: listing.listingNumber,
        starts_at: startsAt,
        ends_at: endsAt,
        source: input.source,
      }),
      ...alsoWrite({ id }),
    ])
    .catch((err: unknown) => {
      if (isNotNullViolation(err, "appointments.listing_id")) throw new DomainError("listing_already_cancelled");
      return quotaRefusal(db, listing.agencyId, err);
    });
  return appointment!;
}

export async function rescheduleAppointment(
  db: Db,
  listing: Listing,
  appointment: Appointment,
  input: { startsAt: string; endsAt: string },
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Appointment> {
  if (appointment.status !== "scheduled") throw new DomainError("appointment_not_scheduled");
  checkTimes(input.startsAt, input.endsAt);
  const startsAt = new Date(input.startsAt).toISOString();
  const endsAt = new Date(input.endsAt).toISOString();
  const [[updated]] = await db.batch([
    db
      .update(appointments)
      // A new time reopens a closed shoot; the nightly sweep closes it again if that time is past too.
      .set({ startsAt, endsAt, closedAt: null, updatedAt: nowIso() })
      .where(and(eq(appointments.id, appointment.id), eq(appointments.status, "scheduled")))
      .returning(),
    outboxInsertIfChanged(db, listing.agencyId, "appointment.rescheduled", {
      appointment_id: appointment.id,
      listing_number: listing.listingNumber,
      previous_starts_at: appointment.startsAt,
      previous_ends_at: appointment.endsAt,
      starts_at: startsAt,
      ends_at: endsAt,
    }),
    ...alsoWrite,
  ]);
  if (!updated) throw new DomainError("appointment_not_scheduled");
  return updated;
}

export async function cancelAppointment(
  db: Db,
  listing: Listing,
  appointment: Appointment,
  reason: "dashboard" | "api",
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<Appointment> {
  if (appointment.status !== "scheduled") throw new DomainError("appointment_not_scheduled");
  const [[updated]] = await db.batch([
    db
      .update(appointments)
      .set({ status: "cancelled", updatedAt: nowIso() })
      .where(and(eq(appointments.id, appointment.id), eq(appointments.status, "scheduled")))
      .returning(),
    outboxInsertIfChanged(db, listing.agencyId, "appointment.cancelled", {
      appointment_id: appointment.id,
      listing_number: listing.listingNumber,
      starts_at: appointment.startsAt,
      reason,
    }),
    ...alsoWrite,
  ]);
  if (!updated) throw new DomainError("appointment_not_scheduled");
  return updated;
}
