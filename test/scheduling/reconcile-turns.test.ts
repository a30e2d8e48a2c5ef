import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { SUBJECTS_PER_RUN } from "../../src/calendar/reconcile/run";
import { appointments, calendarConnections } from "../../src/db/schema";
import worker from "../../src/index";
import { db, internal, makeListing, makeTenant, mockFetch, outbox, type Tenant } from "../support/harness";

afterEach(() => vi.restoreAllMocks());

const HOUR = 3600_000;
const at = (offsetMs: number) => new Date(Math.ceil(Date.now() / HOUR) * HOUR + offsetMs).toISOString();

async function scheduled(cron: string, bindings: Partial<Env> = {}) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron, scheduledTime: Date.now() }), { ...env, ...bindings }, ctx);
  await waitOnExecutionContext(ctx);
}
const reconcile = (bindings: Partial<Env> = {}) => scheduled("*/15 * * * *", bindings);
const nightly = () => scheduled("0 3 * * *");

/** Connects the agent's Google calendar and books a shoot on it; answers the shoot's id and its listing number. */
async function shoot(t: Tenant, eventId: string, startsAt: string, endsAt: string) {
  await internal(`/internal/v1/users/${t.agent.id}/calendar`, {
    method: "PUT",
    body: {
      provider: "google",
      calendar_id: `${t.agent.id}@example.com`,
      client_id: "c",
      refresh_token: "r",
      access_token: "valid",
      access_token_expires_at: "2099-01-01T00:00:00Z",
    },
  });
  const listing = await makeListing(t);
  const apt = await internal(`/internal/v1/agencies/${t.agencyId}/listings/${listing.listing_number}/appointments`, {
    method: "POST",
    body: { starts_at: startsAt, ends_at: endsAt, calendar_event_id: eventId },
  });
  expect(apt.status, apt.text).toBe(201);
  return { id: apt.json.id as string, listingNumber: listing.listing_number as string };
}

/** `n` more shoots copied from `id`, with event ids `${prefix}-${i}`. */
async function copies(id: string, prefix: string, n: number) {
  const row = (await db().select().from(appointments).where(eq(appointments.id, id)).get())!;
  for (let i = 0; i < n; i++)
    await db()
      .insert(appointments)
      .values({ ...row, id: `${id}x${String(i).padStart(3, "0")}`, calendarEventId: `${prefix}-${i}` });
}

/** Every event id the calendars were asked for; `answer` decides each answer (default: not found). */
function calendars(
  answer: (eventId: string) => Response | Promise<Response> = () => new Response("{}", { status: 404 }),
) {
  const asked: string[] = [];
  mockFetch((req) => {
    const id = decodeURIComponent(new URL(req.url).pathname.split("/").pop()!);
    asked.push(id);
    return answer(id);
  });
  return asked;
}

const orphanIds = async (t: Tenant) =>
  (await outbox(t.agencyId, "appointment.orphan.detected")).map((e) => (e.data as { subject_id: string }).subject_id);

describe("reconciliation over time", () => {
  it("closes shoots that ended over a day ago and checks only shoots around now", async () => {
    const t = await makeTenant();
    const past = await shoot(t, "ev-past", at(-72 * HOUR), at(-70 * HOUR));
    const recent = await shoot(t, "ev-recent", at(-5 * HOUR), at(-3 * HOUR));
    const soon = await shoot(t, "ev-soon", at(48 * HOUR), at(50 * HOUR));
    const farAway = await shoot(t, "ev-far", at(200 * 24 * HOUR), at(200 * 24 * HOUR + HOUR));
    // Before the nightly job closes it, the window alone leaves the past shoot out.
    const beforeClosing = calendars();
    await reconcile();
    expect(beforeClosing).toContain("ev-recent");
    expect(beforeClosing).not.toContain("ev-past");
    await nightly();
    const closedAt = async (id: string) =>
      (await db().select().from(appointments).where(eq(appointments.id, id)).get())!.closedAt;
    expect(await closedAt(past.id)).toEqual(expect.any(String));
    for (const open of [recent, soon, farAway]) expect(await closedAt(open.id)).toBeNull();

    const asked = calendars();
    await reconcile();
    expect(asked).toEqual(expect.arrayContaining(["ev-recent", "ev-soon"]));
    expect(asked).not.toContain("ev-past");
    expect(asked).not.toContain("ev-far");
    expect((await orphanIds(t)).sort()).toEqual([recent.id, soon.id].sort());

    // A new time reopens a closed shoot.
    const moved = await internal(
      `/internal/v1/agencies/${t.agencyId}/listings/${past.listingNumber}/appointments/${past.id}`,
      { method: "PATCH", body: { starts_at: at(24 * HOUR), ends_at: at(26 * HOUR) } },
    );
    expect(moved.status, moved.text).toBe(200);
    expect(await closedAt(past.id)).toBeNull();
  });

  it("takes turns across agencies: a small agency is checked in the same run as a large one's backlog", async () => {
    const big = await makeTenant();
    const first = await shoot(big, "big-0", at(24 * HOUR), at(26 * HOUR));
    await copies(first.id, "big", SUBJECTS_PER_RUN * 2);
    const small = await makeTenant();
    await shoot(small, "small-0", at(30 * HOUR), at(31 * HOUR));
    const asked = calendars(() => Response.json({ status: "confirmed", start: { dateTime: at(24 * HOUR) } }));
    await reconcile();
    expect(asked).toContain("small-0");
    const bigChecked = asked.filter((id) => id.startsWith("big-"));
    expect(bigChecked.length).toBeGreaterThan(0);
    expect(asked.length).toBeLessThanOrEqual(SUBJECTS_PER_RUN);
    // The next run goes on with the large agency's backlog, and the small one is checked again.
    asked.length = 0;
    await reconcile();
    expect(asked).toContain("small-0");
    expect(asked.filter((id) => bigChecked.includes(id))).toEqual([]);
  });

  it("a calendar that hangs costs its own agency one call, not the run", async () => {
    const slow = await makeTenant();
    const first = await shoot(slow, "slow-0", at(24 * HOUR), at(26 * HOUR));
    await copies(first.id, "slow", 10);
    const fine = await makeTenant();
    const gone = await shoot(fine, "fine-gone", at(28 * HOUR), at(29 * HOUR));
    // The slow calendar never answers, whatever its abort signal says.
    const asked = calendars((id) =>
      id.startsWith("slow-") ? new Promise<Response>(() => {}) : new Response("{}", { status: 404 }),
    );
    const started = Date.now();
    await reconcile({ CALENDAR_TIMEOUT_MS: "200" });
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(await orphanIds(fine)).toEqual([gone.id]);
    expect(asked.filter((id) => id.startsWith("slow-"))).toHaveLength(1);
    const conn = await db()
      .select()
      .from(calendarConnections)
      .where(eq(calendarConnections.userId, slow.agent.id))
      .get();
    expect(conn?.lastError).toMatch(/^calendar_provider_timeout: /);
    expect(await orphanIds(slow)).toEqual([]);
  });
});
