import type { Interval } from "./outbound";
import { localDate, zonedToUtc } from "./zoned";

/** Shoots are offered Monday to Friday, 09:00 to 17:00 in the requested timezone. */
export const WORKING_HOURS = { days: [1, 2, 3, 4, 5], start: 9, end: 17 } as const;
const MAX_SLOTS = 500;

/**
 * The busy blocks, indexed once for overlap questions: sorted by end, with the earliest start
 * among each block and every later-ending one. A slot [start, end) meets a block when the
 * block ends after `start` and starts before `end` (a zero-length or inverted block too,
 * exactly as a block-by-block comparison says): the blocks ending after `start` are a
 * suffix of the order, found by binary search, and the suffix's earliest start decides.
 */
function busyIndex(busy: Interval[]): (start: number, end: number) => boolean {
  const byEnd = [...busy].sort((a, b) => a.end - b.end);
  const earliestStart = new Array<number>(byEnd.length + 1);
  earliestStart[byEnd.length] = Number.POSITIVE_INFINITY;
  for (let i = byEnd.length - 1; i >= 0; i--) earliestStart[i] = Math.min(byEnd[i]!.start, earliestStart[i + 1]!);
  return (start, end) => {
    let lo = 0;
    let hi = byEnd.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (byEnd[mid]!.end > start) hi = mid;
      else lo = mid + 1;
    }
    return earliestStart[lo]! < end;
  };
}

/**
 * Back-to-back slots of `durationMs` from the start of each working day, inside
 * [from, to), that overlap no busy interval. The busy blocks are sorted once; each
 * candidate slot then costs a binary search, not a pass over every block.
 */
export function freeSlots(
  from: number,
  to: number,
  durationMs: number,
  busy: Interval[],
  timeZone: string,
): Interval[] {
  const slots: Interval[] = [];
  const taken = new Set<number>();
  const overlapsBusy = busyIndex(busy);
  for (let day = from - 86_400_000; day < to + 86_400_000 && slots.length < MAX_SLOTS; day += 86_400_000) {
    const { y, m, d, weekday } = localDate(day, timeZone);
    if (!(WORKING_HOURS.days as readonly number[]).includes(weekday)) continue;
    const open = zonedToUtc(y, m, d, WORKING_HOURS.start, 0, 0, timeZone);
    const close = zonedToUtc(y, m, d, WORKING_HOURS.end, 0, 0, timeZone);
    for (let start = open; start + durationMs <= close && slots.length < MAX_SLOTS; start += durationMs) {
      const end = start + durationMs;
      if (start < from || end > to) continue;
      if (taken.has(start) || overlapsBusy(start, end)) continue;
      taken.add(start);
      slots.push({ start, end });
    }
  }
  return slots.sort((a, b) => a.start - b.start);
}
