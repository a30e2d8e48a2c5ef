import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { agencyCursorName, SUBJECTS_PER_RUN } from "../../src/calendar/reconcile/run";
import { discrepancyOf } from "../../src/calendar/reconcile/settle";
import { appointments, calendarConnections, jobCursors, tours } from "../../src/db/schema";
import worker from "../../src/index";
import {
  call,
  captureErrorLogs,
  db,
  internal,
  makeListing,
  makeTenant,
  mockFetch,
  outbox,
  type Tenant,
} from "../support/harness";

afterEach(() => vi.restoreAllMocks());

const HOUR = 3600_000;
/** A shoot a few days ahead, on the hour: inside the window reconciliation checks, whenever the tests run. */
const START = new Date(Math.ceil(Date.now() / HOUR) * HOUR + 72 * HOUR).toISOString();
const END = new Date(Date.parse(START) + 2 * HOUR).toISOString();
const DAY_AFTER = new Date(Date.parse(START) + 24 * HOUR).toISOString();

/** The agent's Google calendar, answering events.get from `calendar` (event id -> start, or null for unreadable). */
function googleCalendar(calendar: Map<string, string | null>) {
  mockFetch((req) => {
    const id = decodeURIComponent(new URL(req.url).pathname.split("/").pop()!);
    if (!calendar.has(id)) return new Response("{}", { status: 404 });
    const start = calendar.get(id);
    return Response.json(
      start === null ? { id, status: "confirmed", start: {} } : { id, status: "confirmed", start: { dateTime: start } },
    );
  });
}

async function run() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "*/15 * * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

async function bookedShoot(t: Tenant, eventId: string) {
  await internal(`/internal/v1/users/${t.agent.id}/calendar`, {
    method: "PUT",
    body: {
      provider: "google",
      calendar_id: "agent@example.com",
      client_id: "c",
      refresh_token: "r",
      access_token: "valid",
      access_token_expires_at: "2099-01-01T00:00:00Z",
    },
  });
  const listing = await makeListing(t);
  const apt = await internal(`/internal/v1/agencies/${t.agencyId}/listings/${listing.listing_number}/appointments`, {
    method: "POST",
    body: { starts_at: START, ends_at: END, calendar_event_id: eventId },
  });
  expect(apt.status, apt.text).toBe(201);
  return apt.json.id as string;
}

const orphans = async (t: Tenant) =>
  (await outbox(t.agencyId, "appointment.orphan.detected")).map((e) => e.data as Record<string, unknown>);

describe("calendar reconciliation", () => {
  it("a missing event is reported once while it stays missing, and again after it healed and broke", async () => {
    const t = await makeTenant();
    const calendar = new Map<string, string | null>();
    const id = await bookedShoot(t, "ev-missing");
    googleCalendar(calendar);
    await run();
    await run();
    expect(await orphans(t)).toEqual([
      {
        subject_type: "appointment",
        subject_id: id,
        calendar_event_id: "ev-missing",
        discrepancy: "missing",
        expected_starts_at: START,
        calendar_starts_at: null,
      },
    ]);
    calendar.set("ev-missing", START);
    await run();
    expect(await orphans(t)).toHaveLength(1);
    calendar.delete("ev-missing");
    await run();
    expect(await orphans(t)).toHaveLength(2);
  });

  it("reports a moved and a malformed event with what the calendar holds", async () => {
    const t = await makeTenant();
    const moved = await bookedShoot(t, "ev-moved");
    const broken = await bookedShoot(t, "ev-broken");
    const fine = await bookedShoot(t, "ev-fine");
    googleCalendar(
      new Map([
        ["ev-moved", DAY_AFTER],
        ["ev-broken", null],
        ["ev-fine", START],
      ]),
    );
    await run();
    const reported = await orphans(t);
    expect(reported).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          subject_id: moved,
          discrepancy: "moved",
          calendar_starts_at: DAY_AFTER,
        }),
        expect.objectContaining({ subject_id: broken, discrepancy: "malformed", calendar_starts_at: null }),
      ]),
    );
    expect(reported.some((r) => r.subject_id === fine)).toBe(false);
    expect(reported).toHaveLength(2);
  });

  it("checks tours against the agency owner's calendar", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/owner.ics" },
    });
    const tour = await call("/api/v1/tours", {
      key: t.key,
      body: { address: "1 Tour Rd", city: "Portside", state: "CA", zipcode: "94110" },
    });
    await db().update(tours).set({ calendarEventId: "tour-event-1" }).where(eq(tours.id, tour.json.id));
    mockFetch(() => new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR"));
    await run();
    expect(await orphans(t)).toEqual([
      expect.objectContaining({ subject_type: "tour", subject_id: tour.json.id, discrepancy: "missing" }),
    ]);
  });

  it("an unreachable calendar is skipped, not reported", async () => {
    const t = await makeTenant();
    await bookedShoot(t, "ev-offline");
    mockFetch(() => new Response("down", { status: 503 }));
    await run();
    expect(await orphans(t)).toEqual([]);
  });

  it("a run checks a bounded slice and the next run resumes after it, within the D1 budget", async () => {
    const t = await makeTenant();
    const first = await bookedShoot(t, "ev-bulk-0");
    const row = await db().select().from(appointments).where(eq(appointments.id, first)).get();
    const mine = new Set(["ev-bulk-0"]);
    for (let i = 1; i < SUBJECTS_PER_RUN + 10; i++) {
      mine.add(`ev-bulk-${i}`);
      await db()
        .insert(appointments)
        .values({ ...row!, id: `${first}x${String(i).padStart(3, "0")}`, calendarEventId: `ev-bulk-${i}` });
    }
    // Every event is where it should be, so only the fetches tell what each run checked.
    const asked: string[] = [];
    mockFetch((req) => {
      const id = decodeURIComponent(new URL(req.url).pathname.split("/").pop()!);
      asked.push(id);
      return Response.json({ id, status: "confirmed", start: { dateTime: START } });
    });
    await run();
    const firstRun = [...asked];
    expect(firstRun.length).toBeLessThanOrEqual(SUBJECTS_PER_RUN);
    const cursor = await db()
      .select()
      .from(jobCursors)
      .where(eq(jobCursors.name, agencyCursorName(t.agencyId)))
      .get();
    expect(cursor?.position).toMatch(/^appointment:/);
    asked.length = 0;
    await run();
    const secondRun = [...asked];
    // Other agencies' few events are checked on every turn; this agency's walk goes on where it stopped.
    expect(secondRun.filter((id) => mine.has(id) && firstRun.includes(id))).toEqual([]);
    for (const id of mine) expect([...firstRun, ...secondRun], id).toContain(id);
    expect(await orphans(t)).toEqual([]);
  });

  it("a failing connection is recorded on its row and the run moves past it, reporting the rest once", async () => {
    const broken = await makeTenant();
    const down = await makeTenant();
    const fine = await makeTenant();
    await bookedShoot(broken, "ev-sealed-badly");
    await bookedShoot(down, "ev-provider-down");
    const id = await bookedShoot(fine, "ev-gone");
    // Credentials that no longer open (a rotated secret, a damaged row): unexpected, not a provider answer.
    await db()
      .update(calendarConnections)
      .set({ credentialsSealed: "v1.not-a-sealed-value" })
      .where(eq(calendarConnections.userId, broken.agent.id));
    mockFetch((req) => {
      if (req.url.endsWith("ev-provider-down")) return new Response("down", { status: 503 });
      return new Response("{}", { status: 404 });
    });
    const logs = captureErrorLogs();
    await run();
    await run();
    expect(await orphans(fine)).toEqual([expect.objectContaining({ subject_id: id, discrepancy: "missing" })]);
    const conn = (userId: string) =>
      db().select().from(calendarConnections).where(eq(calendarConnections.userId, userId)).get();
    expect(await conn(broken.agent.id)).toMatchObject({ lastError: expect.stringMatching(/^unexpected: /) });
    expect(await conn(down.agent.id)).toMatchObject({
      lastError: expect.stringMatching(/^calendar_provider_error: /),
      lastCheckedAt: expect.any(String),
    });
    expect(await conn(fine.agent.id)).toMatchObject({ lastError: null, lastCheckedAt: expect.any(String) });
    expect(await orphans(broken)).toEqual([]);
    expect(await orphans(down)).toEqual([]);
    // Only the unexpected failure is an error for the operator; a provider that is down is not.
    expect(logs).toEqual([
      expect.objectContaining({
        level: "error",
        job: "calendar_reconciliation",
        connection_id: (await conn(broken.agent.id))!.id,
        error: "SealError: unsupported ciphertext",
      }),
    ]);
  });

  it("classifies discrepancies", () => {
    expect(discrepancyOf({ expectedStart: START }, { found: false })).toBe("missing");
    expect(discrepancyOf({ expectedStart: START }, { found: true, start: null })).toBe("malformed");
    expect(
      discrepancyOf(
        { expectedStart: START },
        { found: true, start: new Date(Date.parse(START) + 30_000).toISOString() },
      ),
    ).toBeNull();
    expect(
      discrepancyOf({ expectedStart: START }, { found: true, start: new Date(Date.parse(START) + HOUR).toISOString() }),
    ).toBe("moved");
  });
});
