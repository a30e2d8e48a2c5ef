import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { Interval } from "../../src/calendar/outbound";
import { freeSlots, WORKING_HOURS } from "../../src/calendar/slots";
import { localDate, zonedToUtc } from "../../src/calendar/zoned";

/** The slots as a comparison of every candidate slot with every busy block finds them. */
function naiveFreeSlots(from: number, to: number, durationMs: number, busy: Interval[], timeZone: string) {
  const slots: Interval[] = [];
  for (let day = from - 86_400_000; day < to + 86_400_000 && slots.length < 500; day += 86_400_000) {
    const { y, m, d, weekday } = localDate(day, timeZone);
    if (!(WORKING_HOURS.days as readonly number[]).includes(weekday)) continue;
    const open = zonedToUtc(y, m, d, WORKING_HOURS.start, 0, 0, timeZone);
    const close = zonedToUtc(y, m, d, WORKING_HOURS.end, 0, 0, timeZone);
    for (let start = open; start + durationMs <= close && slots.length < 500; start += durationMs) {
      const end = start + durationMs;
      if (start < from || end > to) continue;
      if (busy.some((b) => b.start < end && b.end > start)) continue;
      if (slots.some((s) => s.start === start)) continue;
      slots.push({ start, end });
    }
  }
  return slots.sort((a, b) => a.start - b.start);
}

const HOUR = 3_600_000;
// Around the end of daylight saving time in the US and Europe, so that a local day repeats.
const BASE = Date.UTC(2026, 9, 20);

describe("free slots", () => {
  it("the sorted pass answers what comparing every slot with every busy block answers", () => {
    const block = fc.record({
      start: fc.integer({ min: -48, max: 24 * 24 }).map((h) => BASE + (h * HOUR) / 2),
      length: fc.integer({ min: -4, max: 40 }).map((h) => (h * HOUR) / 4),
    });
    fc.assert(
      fc.property(
        fc.integer({ min: 0, max: 10 * 24 }),
        fc.integer({ min: 1, max: 21 * 24 }),
        fc.constantFrom(15, 30, 45, 60, 90, 120, 240, 480),
        fc.array(block, { maxLength: 60 }),
        fc.constantFrom("America/Los_Angeles", "Europe/Berlin", "UTC", "Asia/Kolkata", "Australia/Sydney"),
        (fromHour, spanHours, minutes, blocks, timeZone) => {
          const from = BASE + fromHour * HOUR;
          const to = from + spanHours * HOUR;
          const busy = blocks.map((b) => ({ start: b.start, end: b.start + b.length }));
          const expected = naiveFreeSlots(from, to, minutes * 60_000, busy, timeZone);
          expect(freeSlots(from, to, minutes * 60_000, busy, timeZone)).toEqual(expected);
        },
      ),
      { numRuns: 300, seed: 20_261_020 },
    );
  });
});
