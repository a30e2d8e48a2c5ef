import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { feedBusy, feedEventStart, readFeed } from "../../src/calendar/ics/feed";
import { calendarConnections, users } from "../../src/db/schema";
import { createUser } from "../../src/domain/people/hierarchy";
import worker from "../../src/index";
import { BASE, call, db, expectError, internal, makePlatformKey, makeTenant, mockFetch } from "../support/harness";

afterEach(() => vi.restoreAllMocks());

// Monday 2026-11-30 in Los Angeles (UTC-8): working hours are 17:00–01:00 UTC.
const FROM = "2026-11-30T00:00:00-08:00";
const TO = "2026-12-01T00:00:00-08:00";
const query = (extra = "") =>
  `/api/v1/scheduling/availability?from=${encodeURIComponent(FROM)}&to=${encodeURIComponent(TO)}&duration_minutes=120&timezone=America/Los_Angeles${extra}`;

const ICS = [
  "BEGIN:VCALENDAR",
  "BEGIN:VEVENT",
  "UID:shoot-1",
  "DTSTART;TZID=America/Los_Angeles:20261130T110000",
  "DTEND;TZID=America/Los_Angeles:20261130T130000",
  "SUMMARY:Busy",
  "END:VEVENT",
  "BEGIN:VEVENT",
  "UID:free-time",
  "DTSTART:20261130T230000Z",
  "DTEND:20261201T000000Z",
  "TRANSP:TRANSPARENT",
  "END:VEVENT",
  "END:VCALENDAR",
].join("\r\n");

function intercept(handler: (req: Request) => Response | Promise<Response>) {
  const calls: { url: string; body: string }[] = [];
  mockFetch(async (req) => {
    // Decoded from bytes: the token refresh posts a form, and .text() on a form body makes workerd warn.
    calls.push({ url: req.url, body: new TextDecoder().decode(await req.clone().arrayBuffer()) });
    return handler(req);
  });
  return calls;
}

describe("availability", () => {
  it("answers free slots from an ICS feed inside working hours, and whose calendar answered", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/feed.ics" },
    });
    const calls = intercept(() => new Response(ICS, { headers: { "Content-Type": "text/calendar" } }));
    const r = await call(query(), { key: t.key });
    expect(r.status, r.text).toBe(200);
    expect(r.json.calendar).toEqual({ provider: "ics", connected_user_id: t.owner.id });
    // 09–11 free, 11–13 busy, 13–15 and 15–17 free (the transparent event does not block).
    expect(r.json.slots.map((s: any) => s.start)).toEqual([
      "2026-11-30T09:00:00-08:00",
      "2026-11-30T13:00:00-08:00",
      "2026-11-30T15:00:00-08:00",
    ]);
    expect(calls[0]!.url).toBe("https://cal.example.com/feed.ics");
  });

  it("the defaulted subject is held to the agency too: a key minted from outside it reads no calendar", async () => {
    const t = await makeTenant();
    // A platform admin mints a key for the agency; the admin belongs to the platform agency.
    const platform = await makePlatformKey(t.agencyId, { scopes: ["scheduling:read"] });
    await internal(`/internal/v1/users/${platform.admin.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/platform.ics" },
    });
    const calls = intercept(() => new Response(ICS, { headers: { "Content-Type": "text/calendar" } }));
    expectError(await call(query(), { key: platform.key }), 404, "user_not_found");
    expect(calls, "no calendar of another agency was read").toEqual([]);
    // Naming a user of the agency still works for that key.
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/owner.ics" },
    });
    const named = await call(query(`&user_id=${t.owner.id}`), { key: platform.key });
    expect(named.json.calendar, named.text).toEqual({ provider: "ics", connected_user_id: t.owner.id });
  });

  it("resolves the connection up the manager chain", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.teamLead.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/lead.ics" },
    });
    intercept(() => new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR"));
    const forAgent = await call(query(`&user_id=${t.agent.id}`), { key: t.key });
    expect(forAgent.json.calendar, forAgent.text).toEqual({ provider: "ics", connected_user_id: t.teamLead.id });
    expect(forAgent.json.slots).toHaveLength(4);
    expectError(await call(query(`&user_id=${t.viewer.id}`), { key: t.key }), 403, "calendar_not_connected");
    expectError(await call(query(), { key: t.key }), 403, "calendar_not_connected");
    const other = await makeTenant();
    expectError(await call(query(`&user_id=${other.agent.id}`), { key: t.key }), 404, "user_not_found");
  });

  it("walks the manager chain in one query, held to the agency", async () => {
    const t = await makeTenant();
    let manager = t.agent;
    for (let i = 0; i < 12; i++)
      manager = await createUser(db(), {
        managerId: manager.id,
        role: "agent",
        name: `Level ${i}`,
        email: `level-${i}-${crypto.randomUUID()}@example.test`,
      });
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/owner.ics" },
    });
    intercept(() => new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR"));
    const statements: string[] = [];
    const prepare = env.DB.prepare.bind(env.DB);
    vi.spyOn(env.DB, "prepare").mockImplementation((q: string) => {
      statements.push(q);
      return prepare(q);
    });
    const r = await call(query(`&user_id=${manager.id}`), { key: t.key });
    vi.restoreAllMocks();
    expect(r.json.calendar, r.text).toEqual({ provider: "ics", connected_user_id: t.owner.id });
    // Besides the subject's own check, one statement reads the chain (not one per manager).
    const chainReads = statements.filter((q) => /with recursive|select "manager_id" from "users"/i.test(q));
    expect(chainReads, statements.join("\n")).toHaveLength(1);
    // A manager moved into another agency by hand is not followed: the chain stops at the agency.
    const other = await makeTenant();
    await internal(`/internal/v1/users/${other.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/other.ics" },
    });
    await db().update(users).set({ managerId: other.owner.id }).where(eq(users.id, t.teamLead.id));
    await db().delete(calendarConnections).where(eq(calendarConnections.userId, t.owner.id));
    const stopped = await call(query(`&user_id=${t.agent.id}`), { key: t.key });
    expectError(stopped, 403, "calendar_not_connected");
    expect(stopped.json.error.details.checked_user_ids).toEqual([t.agent.id, t.teamLead.id]);
  });

  it("uses Google freeBusy, refreshing an expired token and storing it sealed", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: {
        provider: "google",
        calendar_id: "primary",
        client_id: "client-1",
        refresh_token: "refresh-1",
        access_token: "old",
        access_token_expires_at: "2020-01-01T00:00:00Z",
      },
    });
    const calls = intercept(async (req) => {
      if (req.url === "https://oauth2.googleapis.com/token")
        return Response.json({ access_token: "fresh-token", expires_in: 3600 });
      expect(req.headers.get("Authorization")).toBe("Bearer fresh-token");
      return Response.json({
        calendars: { primary: { busy: [{ start: "2026-11-30T17:00:00Z", end: "2026-11-30T21:00:00Z" }] } },
      });
    });
    const r = await call(query(), { key: t.key });
    expect(r.json.calendar, r.text).toEqual({ provider: "google", connected_user_id: t.owner.id });
    expect(r.json.slots.map((s: any) => s.start)).toEqual(["2026-11-30T13:00:00-08:00", "2026-11-30T15:00:00-08:00"]);
    expect(calls.map((c) => c.url)).toEqual([
      "https://oauth2.googleapis.com/token",
      "https://www.googleapis.com/calendar/v3/freeBusy",
    ]);
    expect(calls[0]!.body).toContain("grant_type=refresh_token");
    const stored = await db()
      .select()
      .from(calendarConnections)
      .where(eq(calendarConnections.userId, t.owner.id))
      .get();
    expect(stored!.credentialsSealed).not.toContain("fresh-token");
    expect(stored!.credentialsSealed).not.toContain("refresh-1");
    intercept(() => Response.json({ calendars: { primary: { busy: [] } } }));
    expect((await call(query(), { key: t.key })).json.slots).toHaveLength(4);
  });

  it("a failing provider is 502, a silent one 504 — never a 500 or a hang", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://cal.example.com/feed.ics" },
    });
    intercept(() => new Response("oops", { status: 500 }));
    const failed = await call(query(), { key: t.key });
    expectError(failed, 502, "calendar_provider_error");
    expect(failed.json.error.details.provider_status).toBe(500);
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "google", calendar_id: "primary", client_id: "c", refresh_token: "r" },
    });
    intercept(() => new Response("not json"));
    expectError(await call(query(), { key: t.key }), 502, "calendar_provider_error");
    vi.restoreAllMocks();
    mockFetch(
      (_req, init) =>
        new Promise((_, reject) => init?.signal?.addEventListener("abort", () => reject(init.signal!.reason))),
    );
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}${query()}`, { headers: { "X-API-Key": t.key } }),
      { ...env, CALENDAR_TIMEOUT_MS: "50" } as Env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(504);
    expect(((await res.json()) as any).error.code).toBe("calendar_provider_timeout");
  });

  it("validates the query: range, duration, timezone", async () => {
    const t = await makeTenant();
    expectError(
      await call(`/api/v1/scheduling/availability?from=${encodeURIComponent(TO)}&to=${encodeURIComponent(FROM)}`, {
        key: t.key,
      }),
      422,
      "request_query_invalid",
    );
    expectError(
      await call(`/api/v1/scheduling/availability?from=2026-11-01T00:00:00Z&to=2026-12-15T00:00:00Z`, { key: t.key }),
      422,
      "request_query_invalid",
    );
    expectError(
      await call(query().replace("duration_minutes=120", "duration_minutes=5"), { key: t.key }),
      422,
      "request_query_invalid",
    );
    expectError(
      await call(query().replace("America/Los_Angeles", "Mars/Olympus"), { key: t.key }),
      422,
      "request_query_invalid",
    );
    expectError(await call("/api/v1/scheduling/availability", { key: t.key }), 422, "request_query_invalid");
  });
});

describe("ICS reading", () => {
  it("unfolds lines and reads UTC, zoned and all-day times, and finds a stored event by UID", () => {
    const feed = readFeed(
      "BEGIN:VEVENT\r\nUID:a\r\n " +
        "long-uid\r\nDTSTART;VALUE=DATE:20261201\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\nUID:b\r\n" +
        "DTSTART;TZID=Europe/Berlin:20260701T120000\r\nSTATUS:CANCELLED\r\nEND:VEVENT\r\nBEGIN:VEVENT\r\n" +
        "UID:c\r\nDTSTART;TZID=Europe/Berlin:20260701T120000\r\nDTEND:20260701T110000Z\r\nEND:VEVENT",
    );
    expect(feedEventStart(feed, "along-uid")).toEqual({ found: true, start: Date.UTC(2026, 11, 1) });
    expect(feedEventStart(feed, "b")).toEqual({ found: false });
    expect(feedEventStart(feed, "c")).toEqual({ found: true, start: Date.UTC(2026, 6, 1, 10) });
    const busy = feedBusy(feed, Date.UTC(2026, 0, 1), Date.UTC(2027, 0, 1), "America/New_York");
    expect(busy).toEqual([
      // The all-day date is the whole day in the asked zone (the feed names none).
      { start: Date.UTC(2026, 11, 1, 5), end: Date.UTC(2026, 11, 2, 5) },
      { start: Date.UTC(2026, 6, 1, 10), end: Date.UTC(2026, 6, 1, 11) },
    ]);
  });
});

describe("the demo calendar", () => {
  it("is served only in local development, as a feed the ICS source can read", async () => {
    const r = await call("/dev/demo-calendar.ics");
    expect(r.status, r.text).toBe(200);
    expect(r.headers.get("Content-Type")).toContain("text/calendar");
    const week = feedBusy(readFeed(r.text), Date.now() - 86_400_000, Date.now() + 8 * 86_400_000, "UTC");
    expect(week.filter((b) => b.end > b.start)).toHaveLength(5);
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}/dev/demo-calendar.ics`),
      { ...env, ENVIRONMENT: "sandbox" } as Env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(404);
    expect(((await res.json()) as any).error.code).toBe("request_path_not_found");
  });
});
