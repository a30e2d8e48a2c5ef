import { type RouteHandler, z } from "@hono/zod-openapi";
import { resolveConnection, sourceFor } from "../../calendar/connections";
import { freeSlots, WORKING_HOURS } from "../../calendar/slots";
import { isTimeZone, zonedIso } from "../../calendar/zoned";
import { activeUserOfAgency } from "../../domain/people/users";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";

const MAX_RANGE_DAYS = 31;
const instant = z.iso.datetime({ offset: true });

const AvailabilitySchema = z
  .object({
    calendar: z.object({
      provider: z.enum(["google", "ics", "sandbox"]).openapi({
        description: "`google`, `ics`, or `sandbox`: the sandbox environment's own calendar (sandbox only).",
        example: "google",
      }),
      connected_user_id: z.string().openapi({
        description: "Whose connection answered: the user's own, or the nearest manager's.",
        example: "usr_0mhx3k2a1q8v2l0c9z7rj4",
      }),
    }),
    timezone: z.string().openapi({ description: "The zone asked for.", example: "America/Los_Angeles" }),
    duration_minutes: z.number().int().openapi({ example: 60 }),
    working_hours: z
      .object({ days: z.array(z.string()), start: z.string(), end: z.string() })
      .openapi({ example: { days: ["mon", "tue", "wed", "thu", "fri"], start: "09:00", end: "17:00" } }),
    from: z.string().openapi({ example: "2026-11-23T00:00:00.000Z" }),
    to: z.string().openapi({ example: "2026-11-30T00:00:00.000Z" }),
    slots: z
      .array(
        z.object({
          start: z.string().openapi({
            description: "Start of the slot, ISO 8601 with the offset `timezone` has at that instant.",
            example: "2026-11-23T09:00:00-08:00",
          }),
          end: z.string().openapi({
            description: "End of the slot, ISO 8601 with the offset `timezone` has at that instant.",
            example: "2026-11-23T10:00:00-08:00",
          }),
        }),
      )
      .openapi({
        description:
          "Free slots, earliest first (at most 500). Each time carries the offset of `timezone` at that " +
          "instant (`+00:00` for `UTC`), so a slot reads as the local working time it is.",
        example: [{ start: "2026-11-23T09:00:00-08:00", end: "2026-11-23T10:00:00-08:00" }],
      }),
  })
  .openapi("Availability");

export const availabilityRoute = publicRoute(
  {
    endpoint: "get_availability",
    scope: "scheduling:read",
    errors: ["calendar_not_connected", "user_not_found", "calendar_provider_error", "calendar_provider_timeout"],
    // It calls the outside calendar, and may store refreshed credentials.
  },
  {
    method: "get",
    path: "/api/v1/scheduling/availability",
    operationId: "getAvailability",
    tags: ["Scheduling"],
    summary: "Free shoot slots from the connected calendar",
    description:
      "Free slots of `duration_minutes` between `from` and `to` (at most 31 days), within working hours (Monday " +
      "to Friday, 09:00–17:00 in `timezone`), computed from the busy times of the connected external calendar " +
      "(Google Calendar or an ICS feed; a feed's recurring events are expanded, with their exceptions, and its " +
      "floating times are read in the calendar's own zone, else in `timezone`). Slot times carry the offset of " +
      "`timezone`. The connection is resolved up the manager chain from `user_id` " +
      "(default: the user who minted your key): the user's own calendar, else the nearest manager's. None is 403 " +
      "`calendar_not_connected`; a provider that fails is 502, one that does not answer within 8 s is 504.",
    request: {
      query: z
        .strictObject({
          from: instant.openapi({
            description: "Start of the range (ISO 8601 with offset).",
            example: "2026-11-23T00:00:00Z",
          }),
          to: instant.openapi({
            description: "End of the range; at most 31 days after `from`.",
            example: "2026-11-30T00:00:00Z",
          }),
          duration_minutes: z.coerce
            .number()
            .int()
            .min(15)
            .max(480)
            .default(60)
            .openapi({ description: "Slot length, 15 to 480 minutes.", example: 60 }),
          timezone: z
            .string()
            .default("UTC")
            .refine(isTimeZone, { message: "Not an IANA time zone." })
            .openapi({
              description:
                "IANA time zone of the working hours and of the slot times' offsets; an ICS feed's floating " +
                "times are read in it when the feed names no zone of its own.",
              example: "America/Los_Angeles",
            }),
          user_id: z.string().optional().openapi({
            description: "Whose availability: a user of your agency.",
            example: "usr_0mhx3k2a1q8v2l0c9z7rj4",
          }),
        })
        .refine((q) => Date.parse(q.to) > Date.parse(q.from), { message: "to must be after from.", path: ["to"] })
        .refine((q) => Date.parse(q.to) - Date.parse(q.from) <= MAX_RANGE_DAYS * 86_400_000, {
          message: `The range is at most ${MAX_RANGE_DAYS} days.`,
          path: ["to"],
        }),
    },
    responses: { 200: { description: "Free slots.", content: json(AvailabilitySchema) } },
  },
);

const DAY_NAMES = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

export const availabilityHandler: RouteHandler<typeof availabilityRoute, AppEnv> = async (c) => {
  const q = c.req.valid("query");
  const caller = c.get("caller");
  const db = c.var.db;
  // Every subject, defaulted or given, is an active user of the caller's agency: a key
  // whose minting user moved away never reads the other agency's calendar.
  const subject = await activeUserOfAgency(db, caller.agencyId, q.user_id ?? caller.userId);
  const connection = await resolveConnection(db, caller.agencyId, subject.id);
  const timeoutMs = c.env.CALENDAR_TIMEOUT_MS ? Number(c.env.CALENDAR_TIMEOUT_MS) : undefined;
  const source = await sourceFor(db, c.env, connection, timeoutMs);
  const from = new Date(q.from);
  const to = new Date(q.to);
  const busy = await source.busy(from, to, q.timezone);
  const slots = freeSlots(from.getTime(), to.getTime(), q.duration_minutes * 60_000, busy, q.timezone);
  return c.json(
    AvailabilitySchema.parse({
      calendar: { provider: connection.provider, connected_user_id: connection.userId },
      timezone: q.timezone,
      duration_minutes: q.duration_minutes,
      working_hours: { days: WORKING_HOURS.days.map((d) => DAY_NAMES[d]!), start: "09:00", end: "17:00" },
      from: from.toISOString(),
      to: to.toISOString(),
      slots: slots.map((s) => ({ start: zonedIso(s.start, q.timezone), end: zonedIso(s.end, q.timezone) })),
    }),
    200,
  );
};
