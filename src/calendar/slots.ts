import type { Interval } from "./outbound";
import { localDate, zonedToUtc } from "./zoned";

/** Shoots are offered Monday to Friday, 09:00 to 17:00 in the requested timezone. */
export const WORKING_HOURS = { days: [1, 2, 3, 4, 5], start: 9, end: 17 } as const;
const MAX_SLOTS = 500;

/**
 * Back-to-back slots of `durationMs` from the start of each working day, inside
 * [from, to), that overlap no busy interval.
 */
export function freeSlots(
  from: number,
  to: number,
  durationMs: number,
  busy: Interval[],
  timeZone: string,
): Interval[] {
  const slots: Interval[] = [];
  const sorted = [...busy].sort((a, b) => a.start - b.start);
  for (let day = from - 86_400_000; day < to + 86_400_000 && slots.length < MAX_SLOTS; day += 86_400_000) {
    const { y, m, d, weekday } = localDate(day, timeZone);
    if (!(WORKING_HOURS.days as readonly number[]).includes(weekday)) continue;
    const open = zonedToUtc(y, m, d, WORKING_HOURS.start, 0, 0, timeZone);
    const close = zonedToUtc(y, m, d, WORKING_HOURS.end, 0, 0, timeZone);
    for (let start = open; start + durationMs <= close && slots.length < MAX_SLOTS; start += durationMs) {
      const end = start + durationMs;
      if (start < from || end > to) continue;
      if (sorted.some((b) => b.start < end && b.end > start)) continue;
      if (slots.some((s) => s.start === start)) continue;
      slots.push({ start, end });
    }
  }
  return slots.sort((a, b) => a.start - b.start);
}
