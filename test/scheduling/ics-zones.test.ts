import { describe, expect, it } from "vitest";
import { feedBusy, readFeed } from "../../src/calendar/ics/feed";
import { windowsZoneNames } from "../../src/calendar/ics/windows-zones";
import { isTimeZone } from "../../src/calendar/zoned";

const RANGE = [Date.UTC(2026, 0, 1), Date.UTC(2027, 0, 1)] as const;

/** The start of the one busy block of a feed holding one event with these lines. */
function startOf(lines: string[], opts: { calendar?: string[]; asked?: string } = {}) {
  const text = [
    "BEGIN:VCALENDAR",
    ...(opts.calendar ?? []),
    "BEGIN:VEVENT",
    "UID:one",
    ...lines,
    "END:VEVENT",
    "END:VCALENDAR",
  ].join("\r\n");
  const busy = feedBusy(readFeed(text), ...RANGE, opts.asked ?? "UTC");
  expect(busy, text).toHaveLength(1);
  return new Date(busy[0]!.start).toISOString();
}

describe("time zones of ICS feeds", () => {
  it("every Windows name of the table maps to a zone the runtime knows", () => {
    const names = windowsZoneNames();
    expect(names.length).toBeGreaterThan(120);
    for (const [windows, iana] of names) expect(isTimeZone(iana), `${windows} → ${iana}`).toBe(true);
  });

  it("reads IANA names, Windows names in any case, and IANA names behind a path", () => {
    const at = (tzid: string) => startOf([`DTSTART;TZID=${tzid}:20260701T090000`]);
    expect(at("Europe/Berlin")).toBe("2026-07-01T07:00:00.000Z");
    expect(at("W. Europe Standard Time")).toBe("2026-07-01T07:00:00.000Z");
    expect(at("w. europe standard time")).toBe("2026-07-01T07:00:00.000Z");
    expect(at('"Pacific Standard Time"')).toBe("2026-07-01T16:00:00.000Z");
    expect(at("AUS Eastern Standard Time")).toBe("2026-06-30T23:00:00.000Z");
    expect(at("India Standard Time")).toBe("2026-07-01T03:30:00.000Z");
    expect(at("UTC")).toBe("2026-07-01T09:00:00.000Z");
    expect(at("/mozilla.org/20050126_1/America/New_York")).toBe("2026-07-01T13:00:00.000Z");
  });

  it("floating times: the calendar's X-WR-TIMEZONE (a Windows name too), else the asked zone", () => {
    const floating = ["DTSTART:20260701T090000"];
    expect(startOf(floating, { asked: "Asia/Tokyo" })).toBe("2026-07-01T00:00:00.000Z");
    expect(startOf(floating, { calendar: ["X-WR-TIMEZONE:Europe/London"], asked: "Asia/Tokyo" })).toBe(
      "2026-07-01T08:00:00.000Z",
    );
    expect(startOf(floating, { calendar: ["X-WR-TIMEZONE:Eastern Standard Time"] })).toBe("2026-07-01T13:00:00.000Z");
    // An unknown TZID without a VTIMEZONE is read like a floating time.
    expect(startOf(["DTSTART;TZID=Nowhere Standard Time:20260701T090000"], { asked: "Asia/Tokyo" })).toBe(
      "2026-07-01T00:00:00.000Z",
    );
  });

  it("a VTIMEZONE with an unknown TZID: its X-LIC-LOCATION, else its own rules", () => {
    const vtimezone = (extra: string[]) => [
      "BEGIN:VTIMEZONE",
      "TZID:Custom",
      ...extra,
      "BEGIN:STANDARD",
      "DTSTART:19700101T000000",
      "TZOFFSETFROM:+0530",
      "TZOFFSETTO:+0530",
      "END:STANDARD",
      "END:VTIMEZONE",
    ];
    const event = ["DTSTART;TZID=Custom:20260701T090000"];
    expect(startOf(event, { calendar: vtimezone([]) })).toBe("2026-07-01T03:30:00.000Z");
    expect(startOf(event, { calendar: vtimezone(["X-LIC-LOCATION:Europe/Paris"]) })).toBe("2026-07-01T07:00:00.000Z");
  });
});
