import { and, asc, desc, eq, gt, lt, notInArray } from "drizzle-orm";
import type { BatchItem } from "drizzle-orm/batch";
import type { Db } from "../db/client";
import {
  type CalendarConnection,
  calendarConnections,
  type SandboxCalendarBlock,
  sandboxCalendarBlocks,
  type User,
} from "../db/schema";
import { DomainError } from "../lib/errors";
import { newId, nowIso } from "../lib/ids";
import type { CalendarSource } from "./outbound";

/** A sandbox calendar keeps its most recently written blocks, at most this many. */
const SANDBOX_CALENDAR_BLOCKS = 200;
/** Busy blocks read for one availability range. */
const BUSY_READ_LIMIT = 500;

/**
 * A sandbox calendar (a connection with provider `sandbox`): busy times and stored
 * events come from its blocks in D1 instead of a provider, through the same source
 * interface that availability and reconciliation read Google and ICS calendars with.
 */
export function sandboxSource(db: Db, conn: Pick<CalendarConnection, "userId" | "agencyId">): CalendarSource {
  const ofCalendar = and(
    eq(sandboxCalendarBlocks.userId, conn.userId),
    eq(sandboxCalendarBlocks.agencyId, conn.agencyId),
  );
  return {
    async busy(from, to) {
      const rows = await db
        .select({ startsAt: sandboxCalendarBlocks.startsAt, endsAt: sandboxCalendarBlocks.endsAt })
        .from(sandboxCalendarBlocks)
        .where(
          and(
            ofCalendar,
            lt(sandboxCalendarBlocks.startsAt, to.toISOString()),
            gt(sandboxCalendarBlocks.endsAt, from.toISOString()),
          ),
        )
        .orderBy(asc(sandboxCalendarBlocks.startsAt))
        .limit(BUSY_READ_LIMIT);
      return rows.map((r) => ({ start: Date.parse(r.startsAt), end: Date.parse(r.endsAt) }));
    },
    async event(eventId) {
      const row = await db
        .select({ startsAt: sandboxCalendarBlocks.startsAt })
        .from(sandboxCalendarBlocks)
        .where(and(ofCalendar, eq(sandboxCalendarBlocks.eventId, eventId)))
        .get();
      return row ? { found: true, start: row.startsAt } : { found: false };
    },
  };
}

interface BusyBlockInput {
  /** The calendar event id; a block with this id on the calendar is moved instead. */
  eventId?: string;
  startsAt: string;
  endsAt: string;
  /** Swap the user's own Google or ICS connection for a sandbox calendar. */
  replaceCalendar: boolean;
}

/**
 * Writes a busy block on the user's own sandbox calendar, connecting one first when the
 * user has no calendar of their own (a connection answers for everyone below the user
 * who has none, as any calendar does). A Google or ICS connection is replaced only when
 * asked: 409 `calendar_not_sandbox` otherwise. A new sandbox calendar starts empty, and
 * each calendar keeps its `SANDBOX_CALENDAR_BLOCKS` most recent blocks.
 */
export async function writeSandboxBusyBlock(
  db: Db,
  user: Pick<User, "id" | "agencyId">,
  input: BusyBlockInput,
  alsoWrite: BatchItem<"sqlite">[] = [],
): Promise<{ block: SandboxCalendarBlock; connection: CalendarConnection }> {
  if (Date.parse(input.endsAt) <= Date.parse(input.startsAt))
    throw new DomainError("invalid_appointment_time", {
      details: { starts_at: input.startsAt, ends_at: input.endsAt },
    });
  const own = await db.select().from(calendarConnections).where(eq(calendarConnections.userId, user.id)).get();
  if (own && own.provider !== "sandbox" && !input.replaceCalendar) {
    throw new DomainError("calendar_not_sandbox", {
      message: `The user's own calendar is a ${own.provider} connection; send replace_calendar: true to replace it.`,
      details: { user_id: user.id, provider: own.provider },
    });
  }
  const at = nowIso();
  // A sandbox calendar holds no credentials: there is nothing to seal.
  const connection = { provider: "sandbox" as const, agencyId: user.agencyId, calendarId: null, credentialsSealed: "" };
  const connect: BatchItem<"sqlite">[] =
    own?.provider === "sandbox"
      ? []
      : [
          db
            .insert(calendarConnections)
            .values({ id: newId("cal"), userId: user.id, ...connection, updatedAt: at })
            .onConflictDoUpdate({ target: calendarConnections.userId, set: { ...connection, updatedAt: at } }),
          db.delete(sandboxCalendarBlocks).where(eq(sandboxCalendarBlocks.userId, user.id)),
        ];
  const times = { startsAt: new Date(input.startsAt).toISOString(), endsAt: new Date(input.endsAt).toISOString() };
  const kept = db
    .select({ id: sandboxCalendarBlocks.id })
    .from(sandboxCalendarBlocks)
    .where(eq(sandboxCalendarBlocks.userId, user.id))
    .orderBy(desc(sandboxCalendarBlocks.createdAt), desc(sandboxCalendarBlocks.id))
    .limit(SANDBOX_CALENDAR_BLOCKS);
  const [first, ...rest]: BatchItem<"sqlite">[] = [
    ...connect,
    db
      .insert(sandboxCalendarBlocks)
      .values({
        id: newId("blk"),
        agencyId: user.agencyId,
        userId: user.id,
        eventId: input.eventId ?? newId("busy"),
        ...times,
        createdAt: at,
      })
      .onConflictDoUpdate({
        target: [sandboxCalendarBlocks.userId, sandboxCalendarBlocks.eventId],
        set: { ...times, agencyId: user.agencyId, createdAt: at },
      })
      .returning(),
    db
      .delete(sandboxCalendarBlocks)
      .where(and(eq(sandboxCalendarBlocks.userId, user.id), notInArray(sandboxCalendarBlocks.id, kept))),
    db.select().from(calendarConnections).where(eq(calendarConnections.userId, user.id)),
    ...alsoWrite,
  ];
  const results = await db.batch([first!, ...rest]);
  const [block] = results[connect.length] as SandboxCalendarBlock[];
  const [written] = results[connect.length + 2] as CalendarConnection[];
  return { block: block!, connection: written! };
}
