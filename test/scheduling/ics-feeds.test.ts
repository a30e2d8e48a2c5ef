import { describe, expect, it } from "vitest";
import { MAX_EXPANSION_STEPS } from "../../src/calendar/ics/expand";
import { call, expectError, internal, makeTenant, mockFetch, type Tenant } from "../support/harness";
import fastmailFeed from "./fixtures/fastmail.ics?raw";
import fastmailFreeBusy from "./fixtures/fastmail-freebusy.ics?raw";
import googleFeed from "./fixtures/google.ics?raw";
import icloudFeed from "./fixtures/icloud.ics?raw";
import outlookFeed from "./fixtures/outlook.ics?raw";

/** A tenant whose owner's calendar is an ICS feed answering `feed`. */
async function feedTenant(feed: string): Promise<Tenant> {
  const t = await makeTenant();
  const put = await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
    method: "PUT",
    body: { provider: "ics", feed_url: "https://calendar.example.com/export.ics" },
  });
  expect(put.status, put.text).toBe(200);
  mockFetch(() => new Response(feed, { headers: { "Content-Type": "text/calendar; charset=utf-8" } }));
  return t;
}

const availability = (from: string, to: string, timezone: string) =>
  `/api/v1/scheduling/availability?from=${encodeURIComponent(from)}&to=${encodeURIComponent(to)}` +
  `&duration_minutes=60&timezone=${timezone}`;

/** The offered slot starts for a feed, as a set, with the answer kept for failure messages. */
async function offered(feed: string, from: string, to: string, timezone: string) {
  const t = await feedTenant(feed);
  const r = await call(availability(from, to, timezone), { key: t.key });
  expect(r.status, r.text).toBe(200);
  const starts = new Set<string>(r.json.slots.map((s: { start: string }) => s.start));
  return {
    free: (...slots: string[]) => {
      for (const s of slots) expect(starts.has(s), `${s} should be offered; offered: ${[...starts]}`).toBe(true);
    },
    busy: (...slots: string[]) => {
      for (const s of slots) expect(starts.has(s), `${s} should not be offered`).toBe(false);
    },
    onDay: (day: string) => [...starts].filter((s) => s.startsWith(day)),
  };
}

describe("ICS feeds as Google Calendar exports them", () => {
  const read = () =>
    offered(googleFeed, "2026-03-02T00:00:00-08:00", "2026-03-31T00:00:00-07:00", "America/Los_Angeles");

  it("a weekly series that started a month before the range blocks every later occurrence", async () => {
    const slots = await read();
    // Mondays 10:00 local, on both sides of the change to daylight time on 8 March.
    slots.busy("2026-03-02T10:00:00-08:00", "2026-03-09T10:00:00-07:00", "2026-03-30T10:00:00-07:00");
    slots.free("2026-03-02T09:00:00-08:00", "2026-03-02T11:00:00-08:00", "2026-03-09T11:00:00-07:00");
  });

  it("an EXDATE frees exactly its date, and a RECURRENCE-ID override moves exactly one occurrence", async () => {
    const slots = await read();
    slots.free("2026-03-16T10:00:00-07:00");
    // 23 March moved from 10:00 to 14:00; the weeks around it keep 10:00.
    slots.free("2026-03-23T10:00:00-07:00");
    slots.busy("2026-03-23T14:00:00-07:00");
    slots.free("2026-03-16T14:00:00-07:00", "2026-03-30T14:00:00-07:00");
  });

  it("a cancelled occurrence frees its slot; UNTIL ends the series; transparent events block nothing", async () => {
    const slots = await read();
    slots.busy("2026-03-04T13:00:00-08:00", "2026-03-04T14:00:00-08:00", "2026-03-18T13:00:00-07:00");
    slots.free("2026-03-11T13:00:00-07:00", "2026-03-11T14:00:00-07:00");
    slots.free("2026-03-25T13:00:00-07:00");
    // Lunch every day at noon is shown as free.
    slots.free("2026-03-03T12:00:00-08:00", "2026-03-10T12:00:00-07:00");
  });

  it("an all-day event takes the whole local day; a floating time is read in the calendar's zone", async () => {
    const slots = await read();
    expect(slots.onDay("2026-03-20")).toEqual([]);
    expect(slots.onDay("2026-03-19")).toHaveLength(8);
    slots.busy("2026-03-04T16:00:00-08:00");
  });
});

describe("ICS feeds as Outlook and Exchange publish them", () => {
  const withoutZones = outlookFeed.replace(/BEGIN:VTIMEZONE\r\n[\s\S]*?END:VTIMEZONE\r\n/g, "");

  it("Windows zone names block the right UTC hour, with and without their VTIMEZONE blocks", async () => {
    expect(withoutZones).not.toContain("VTIMEZONE");
    for (const feed of [outlookFeed, withoutZones]) {
      const slots = await offered(feed, "2026-03-02T00:00:00Z", "2026-04-01T00:00:00Z", "UTC");
      // W. Europe Standard Time, Tuesdays 10:00: 09:00 UTC in winter time, 08:00 UTC from 29 March.
      slots.busy("2026-03-03T09:00:00+00:00", "2026-03-10T09:00:00+00:00");
      slots.free("2026-03-03T10:00:00+00:00", "2026-03-31T09:00:00+00:00");
      // The EXDATE frees 17 March; the override moves 24 March to 15:00 Berlin (14:00 UTC).
      slots.free("2026-03-17T09:00:00+00:00", "2026-03-24T09:00:00+00:00");
      slots.busy("2026-03-24T14:00:00+00:00");
      // Pacific Standard Time, Thursdays 08:00, twice: 16:00 UTC, then 15:00 UTC in daylight time.
      slots.busy("2026-03-05T16:00:00+00:00", "2026-03-12T15:00:00+00:00");
      slots.free("2026-03-12T16:00:00+00:00", "2026-03-19T15:00:00+00:00");
      // Shown as free.
      slots.free("2026-03-05T13:00:00+00:00");
    }
  });

  it("a zone only the feed defines is read with its VTIMEZONE's rules", async () => {
    const slots = await offered(outlookFeed, "2026-03-02T00:00:00Z", "2026-04-01T00:00:00Z", "UTC");
    slots.busy("2026-03-06T09:00:00+00:00");
    slots.free("2026-03-06T10:00:00+00:00", "2026-03-06T12:00:00+00:00");
  });
});

describe("ICS feeds as Apple iCloud shares them", () => {
  it("reads IANA TZIDs with their VTIMEZONE, all-day events in the asked zone, and X-APPLE properties", async () => {
    const slots = await offered(icloudFeed, "2026-03-02T00:00:00Z", "2026-03-28T00:00:00Z", "Europe/London");
    slots.busy("2026-03-05T14:00:00+00:00", "2026-03-05T15:00:00+00:00", "2026-03-26T14:00:00+00:00");
    slots.free("2026-03-05T13:00:00+00:00", "2026-03-05T16:00:00+00:00", "2026-03-19T14:00:00+00:00");
    expect(slots.onDay("2026-03-09")).toEqual([]);
    expect(slots.onDay("2026-03-10")).toEqual([]);
    // The birthday is all day but free.
    expect(slots.onDay("2026-03-12")).toHaveLength(6);
  });
});

describe("ICS feeds as Fastmail serves them", () => {
  it("reads IANA TZIDs without VTIMEZONE, COUNT, EXDATE, RDATE and RDATE periods", async () => {
    const slots = await offered(
      fastmailFeed,
      "2026-03-02T00:00:00+11:00",
      "2026-03-28T00:00:00+11:00",
      "Australia/Sydney",
    );
    for (const day of ["03", "09", "11", "13", "17", "19"])
      slots.busy(`2026-03-${day}T10:00:00+11:00`, `2026-03-${day}T11:00:00+11:00`);
    // 5 March is excluded; 23 March would be the eleventh occurrence.
    slots.free("2026-03-05T10:00:00+11:00", "2026-03-23T10:00:00+11:00", "2026-03-10T10:00:00+11:00");
    slots.busy("2026-03-10T14:00:00+11:00", "2026-03-10T15:00:00+11:00");
    slots.busy("2026-03-02T09:00:00+11:00", "2026-03-04T15:00:00+11:00", "2026-03-04T16:00:00+11:00");
    slots.free("2026-03-02T10:00:00+11:00", "2026-03-04T14:00:00+11:00");
  });

  it("reads a free/busy answer: busy and tentative periods, but not free ones", async () => {
    const slots = await offered(
      fastmailFreeBusy,
      "2026-03-02T00:00:00+11:00",
      "2026-03-07T00:00:00+11:00",
      "Australia/Sydney",
    );
    slots.busy("2026-03-03T10:00:00+11:00", "2026-03-03T11:00:00+11:00", "2026-03-03T14:00:00+11:00");
    slots.busy("2026-03-04T11:00:00+11:00");
    slots.free("2026-03-03T12:00:00+11:00", "2026-03-04T12:00:00+11:00", "2026-03-05T11:00:00+11:00");
  });
});

describe("working hours across a change of daylight time", () => {
  it("still start at local 09:00 the working day before and after the US and EU changes", async () => {
    const empty = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nEND:VCALENDAR\r\n";
    const us = await offered(empty, "2026-03-06T00:00:00-08:00", "2026-03-10T00:00:00-07:00", "America/New_York");
    expect(us.onDay("2026-03-06")[0]).toBe("2026-03-06T09:00:00-05:00");
    expect(us.onDay("2026-03-09")[0]).toBe("2026-03-09T09:00:00-04:00");
    const eu = await offered(empty, "2026-03-27T00:00:00+01:00", "2026-03-31T00:00:00+02:00", "Europe/Berlin");
    expect(eu.onDay("2026-03-27")).toEqual(
      ["09", "10", "11", "12", "13", "14", "15", "16"].map((h) => `2026-03-27T${h}:00:00+01:00`),
    );
    expect(eu.onDay("2026-03-30")[0]).toBe("2026-03-30T09:00:00+02:00");
    expect(eu.onDay("2026-03-30").at(-1)).toBe("2026-03-30T16:00:00+02:00");
  });
});

describe("the expansion bound", () => {
  const feedWith = (rule: string) =>
    [
      "BEGIN:VCALENDAR",
      "VERSION:2.0",
      "BEGIN:VEVENT",
      "UID:too-many",
      "DTSTART:20260302T000000Z",
      "DTEND:20260302T000001Z",
      rule,
      "END:VEVENT",
      "END:VCALENDAR",
    ].join("\r\n");

  it("a feed whose expansion would pass the bound is the provider error, never a partial answer", async () => {
    for (const rule of [
      // One occurrence a second: far more than the bound in a day.
      "RRULE:FREQ=SECONDLY",
      // A rule no day can match: ical.js would test candidates for ever.
      "RRULE:FREQ=DAILY;BYMONTH=2;BYMONTHDAY=30",
    ]) {
      const t = await feedTenant(feedWith(rule));
      const r = await call(availability("2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z", "UTC"), { key: t.key });
      expectError(r, 502, "calendar_provider_error");
      expect(r.json.error.details, r.text).toEqual({ provider: "ics", limit_steps: MAX_EXPANSION_STEPS });
    }
  });

  it("a series that started years ago costs only the range it reaches", async () => {
    const t = await feedTenant(feedWith("RRULE:FREQ=MINUTELY;INTERVAL=30").replaceAll(":20260302T", ":20160302T"));
    const r = await call(availability("2026-03-02T00:00:00Z", "2026-03-03T00:00:00Z", "UTC"), { key: t.key });
    expect(r.status, r.text).toBe(200);
    // A one-second block every half hour leaves no hour free.
    expect(r.json.slots).toEqual([]);
  });
});
