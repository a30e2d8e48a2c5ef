import { type RouteHandler, z } from "@hono/zod-openapi";
import { writeSandboxBusyBlock } from "../../calendar/sandbox";
import { activeUserOfAgency } from "../../domain/people/users";
import { idempotencyMark } from "../../http/admission/idempotency-mark";
import type { AppEnv } from "../../http/env";
import { json, publicRoute } from "../../http/route";
import { instant, outsideHelperGuard, TEST_HELPERS_TAG, userIdParam } from "./schema";

const BusyBlockSchema = z.object({
  event_id: z.string().openapi({
    description: "The calendar event id of the block; an appointment's `calendar_event_id` can refer to it.",
    example: "busy_0mhx3k2a1q8v2l0c9z7rj4",
  }),
  user_id: z.string().openapi({ description: "Whose calendar holds it.", example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
  starts_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-12-02T17:00:00.000Z" }),
  ends_at: z.string().openapi({ description: "ISO 8601 UTC.", example: "2026-12-02T19:00:00.000Z" }),
  calendar: z.object({
    provider: z.literal("sandbox"),
    connected_user_id: z.string().openapi({ example: "usr_0mhx3k2a1q8v2l0c9z7rj4" }),
  }),
});

export const busyBlockRoute = publicRoute(
  outsideHelperGuard("scheduling:read", ["user_not_found", "calendar_not_sandbox", "invalid_appointment_time"]),
  {
    method: "post",
    path: "/api/v1/test_helpers/users/{user_id}/calendar/busy_blocks",
    operationId: "testHelperAddBusyBlock",
    tags: [TEST_HELPERS_TAG],
    summary: "Make a user's calendar busy",
    description:
      "Writes a busy block on the user's own **sandbox calendar**: a calendar connection of the sandbox whose busy " +
      "blocks live in the service, read by `GET /api/v1/scheduling/availability` (`calendar.provider`: `sandbox`) " +
      "and by calendar reconciliation through the same code as Google and ICS calendars. A user without a calendar " +
      "of their own gets an empty sandbox calendar first; like any connection it then also answers for the users " +
      "below them who have none. A user whose own calendar is a Google or ICS connection is 409 " +
      "`calendar_not_sandbox` unless `replace_calendar` is true, which swaps it for a new, empty sandbox calendar. " +
      "A block with an `event_id` the calendar holds already is moved to the new times (reconciliation then sees " +
      "a shoot stored on it as `moved`). A calendar keeps its 200 most recently written blocks.",
    request: {
      params: userIdParam,
      body: {
        content: json(
          z.strictObject({
            starts_at: instant("Start of the busy time.", "2026-12-02T17:00:00Z"),
            ends_at: instant("End of the busy time; after `starts_at`.", "2026-12-02T19:00:00Z"),
            event_id: z
              .string()
              .min(1)
              .max(300)
              .optional()
              .openapi({ description: "The block's calendar event id; minted when omitted.", example: "busy_shoot_1" }),
            replace_calendar: z.boolean().default(false).openapi({
              description: "Replace the user's own Google or ICS calendar connection with a sandbox calendar.",
              example: false,
            }),
          }),
        ),
      },
    },
    responses: { 201: { description: "The busy block.", content: json(BusyBlockSchema) } },
  },
);

export const busyBlockHandler: RouteHandler<typeof busyBlockRoute, AppEnv> = async (c) => {
  const db = c.var.db;
  const b = c.req.valid("json");
  const user = await activeUserOfAgency(db, c.get("caller").agencyId, c.req.valid("param").user_id);
  const { block, connection } = await writeSandboxBusyBlock(
    db,
    user,
    { startsAt: b.starts_at, endsAt: b.ends_at, eventId: b.event_id, replaceCalendar: b.replace_calendar },
    idempotencyMark(c, db, { status: 201 }),
  );
  return c.json(
    BusyBlockSchema.parse({
      event_id: block.eventId,
      user_id: block.userId,
      starts_at: block.startsAt,
      ends_at: block.endsAt,
      calendar: { provider: "sandbox", connected_user_id: connection.userId },
    }),
    201,
  );
};
