import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { call, internal, makeTenant, mockFetch } from "../support/harness";

const DAY = 86_400_000;
const MINUTE = 60_000;

const formats = new Map<string, Intl.DateTimeFormat>();

/** Wall time (as UTC fields) of an instant in `zone`, read from Intl alone. */
function wallIn(ms: number, zone: string): number {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat("en-US", {
      timeZone: zone,
      hourCycle: "h23",
      year: "numeric",
      month: "numeric",
      day: "numeric",
      hour: "numeric",
      minute: "numeric",
    });
    formats.set(zone, format);
  }
  const parts = format.formatToParts(new Date(ms));
  const n = (type: string) => Number(parts.find((p) => p.type === type)!.value);
  return Date.UTC(n("year"), n("month") - 1, n("day"), n("hour"), n("minute"));
}

/** The instant a wall time names in `zone`: the offsets around it, else every quarter-hour offset, checked. */
function instantOf(wall: number, zone: string): number {
  const near = [
    wallIn(wall, zone) - wall,
    wallIn(wall - DAY, zone) - wall + DAY,
    wallIn(wall + DAY, zone) - wall - DAY,
  ];
  for (let offset = -14 * 60; offset <= 14 * 60; offset += 15) near.push(offset * MINUTE);
  for (const offset of near) if (wallIn(wall - offset, zone) === wall) return wall - offset;
  throw new Error(`no instant shows ${new Date(wall).toISOString()} in ${zone}`);
}

const stamp = (wall: number) =>
  new Date(wall)
    .toISOString()
    .replace(/[-:]/g, "")
    .replace(/\.\d{3}Z$/, "");

const series = fc.record({
  zone: fc.constantFrom("America/Los_Angeles", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata", "UTC"),
  // The series' own zone most often, so that its occurrences fall in working hours.
  asked: fc.constantFrom("same", "same", "America/New_York", "Europe/London", "Australia/Sydney", "UTC"),
  freq: fc.constantFrom("DAILY", "WEEKLY"),
  interval: fc.integer({ min: 1, max: 3 }),
  // From long before the range to inside it.
  startDay: fc.integer({ min: -400, max: 10 }),
  startMinute: fc.integer({ min: 8 * 4, max: 17 * 4 }).map((q) => q * 15),
  minutes: fc.constantFrom(15, 30, 45, 60, 90, 120, 240),
  // COUNT as occurrences past the first that could reach the range: some series end inside it.
  countPast: fc.option(fc.integer({ min: 0, max: 12 }), { nil: undefined }),
  // Counted from the first occurrence that could reach the range, so that they matter.
  exdates: fc.uniqueArray(fc.integer({ min: 0, max: 20 }), { maxLength: 8 }),
  exdatesInUtc: fc.boolean(),
  // Ranges through March, where the US and EU clocks change, and into April (Sydney's).
  rangeDay: fc.integer({ min: 0, max: 35 }),
});

describe("recurring ICS series", () => {
  it("no offered slot overlaps an occurrence, and every free working hour is offered", async () => {
    const t = await makeTenant();
    await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: "https://calendar.example.com/series.ics" },
    });
    let feed = "";
    mockFetch(() => new Response(feed, { headers: { "Content-Type": "text/calendar" } }));
    const base = Date.UTC(2026, 2, 1);
    await fc.assert(
      fc.asyncProperty(series, async ({ countPast, ...s }) => {
        const asked = s.asked === "same" ? s.zone : s.asked;
        const from = base + s.rangeDay * DAY;
        const to = from + 7 * DAY;
        const first = base + s.startDay * DAY + s.startMinute * MINUTE;
        const step = s.interval * (s.freq === "WEEKLY" ? 7 : 1) * DAY;
        const zoned = s.zone === "UTC" ? ":" : `;TZID=${s.zone}:`;
        const suffix = s.zone === "UTC" ? "Z" : "";
        // The expected occurrences, by plain counting from DTSTART in wall time.
        const occurrences: { start: number; end: number }[] = [];
        const reaching = Math.max(0, Math.ceil((from - 2 * DAY - first) / step));
        const count = countPast === undefined ? undefined : reaching + countPast + 1;
        const excludedIndexes = s.exdates.map((j) => reaching + j);
        const excluded = new Set(excludedIndexes);
        for (let k = 0; (count === undefined || k < count) && first + k * step < to + 2 * DAY; k++) {
          const wall = first + k * step;
          // Occurrences days before the range cannot touch it.
          if (excluded.has(k) || wall < from - 3 * DAY) continue;
          occurrences.push({ start: instantOf(wall, s.zone), end: instantOf(wall + s.minutes * MINUTE, s.zone) });
        }
        const exdates = excludedIndexes.map((k) =>
          s.exdatesInUtc ? `${stamp(instantOf(first + k * step, s.zone))}Z` : `${stamp(first + k * step)}${suffix}`,
        );
        feed = [
          "BEGIN:VCALENDAR",
          "VERSION:2.0",
          "BEGIN:VEVENT",
          "UID:generated-series",
          `DTSTART${zoned}${stamp(first)}${suffix}`,
          `DTEND${zoned}${stamp(first + s.minutes * MINUTE)}${suffix}`,
          `RRULE:FREQ=${s.freq};INTERVAL=${s.interval}${count === undefined ? "" : `;COUNT=${count}`}`,
          ...(exdates.length ? [`EXDATE${s.exdatesInUtc ? ":" : zoned}${exdates.join(",")}`] : []),
          "END:VEVENT",
          "END:VCALENDAR",
        ].join("\r\n");
        const r = await call(
          `/api/v1/scheduling/availability?from=${new Date(from).toISOString()}&to=${new Date(to).toISOString()}` +
            `&duration_minutes=60&timezone=${asked}`,
          { key: t.key },
        );
        expect(r.status, r.text).toBe(200);
        const slots: number[] = r.json.slots.map((x: { start: string }) => Date.parse(x.start));
        for (const slot of slots) {
          const hit = occurrences.find((o) => o.start < slot + 60 * MINUTE && o.end > slot);
          expect(hit, `${new Date(slot).toISOString()} overlaps an occurrence\n${feed}`).toBeUndefined();
        }
        // Every working hour (Monday to Friday, 09:00–17:00 in the asked zone) that no occurrence touches.
        const expected: number[] = [];
        for (let day = wallIn(from, asked) - DAY; day < wallIn(to, asked) + DAY; day += DAY) {
          const midnight = day - (day % DAY);
          const weekday = new Date(midnight).getUTCDay();
          if (weekday === 0 || weekday === 6) continue;
          for (let hour = 9; hour < 17; hour++) {
            const slot = instantOf(midnight + hour * 60 * MINUTE, asked);
            if (slot < from || slot + 60 * MINUTE > to || expected.includes(slot)) continue;
            if (occurrences.some((o) => o.start < slot + 60 * MINUTE && o.end > slot)) continue;
            expected.push(slot);
          }
        }
        expect(slots, feed).toEqual(expected.sort((a, b) => a - b));
      }),
      { numRuns: 80, seed: 20_260_308 },
    );
  });
});
