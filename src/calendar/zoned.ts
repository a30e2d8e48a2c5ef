/**
 * Wall-clock arithmetic in IANA time zones, from the runtime's own zone data (Intl). A wall
 * time is carried as the epoch milliseconds at which a UTC clock would show it, so that
 * adding a nominal duration is plain addition.
 */

// Zone names come from outside (feeds), and Intl takes any capitalisation: the cache is bounded.
const formatters = new Map<string, Intl.DateTimeFormat>();
const MAX_FORMATTERS = 1_000;

function formatter(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (!f) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      hourCycle: "h23",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
      hour: "2-digit",
      minute: "2-digit",
      second: "2-digit",
    });
    if (formatters.size >= MAX_FORMATTERS) formatters.clear();
    formatters.set(timeZone, f);
  }
  return f;
}

/** Offset of `timeZone` from UTC at instant `ms`, in milliseconds. */
function tzOffset(ms: number, timeZone: string): number {
  const parts = formatter(timeZone).formatToParts(new Date(ms));
  const get = (type: string) => Number(parts.find((p) => p.type === type)?.value);
  const asUtc = Date.UTC(get("year"), get("month") - 1, get("day"), get("hour"), get("minute"), get("second"));
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The instant at which the wall clock in `timeZone` shows `wall` (a wall time, see above). */
export function wallToUtc(wall: number, timeZone: string): number {
  const first = wall - tzOffset(wall, timeZone);
  return wall - tzOffset(first, timeZone);
}

/** The wall time that the clock in `timeZone` shows at instant `ms`. */
export function utcToWall(ms: number, timeZone: string): number {
  return ms + tzOffset(ms, timeZone);
}

/** The instant at which the wall clock in `timeZone` shows the given local time. */
export function zonedToUtc(
  y: number,
  mo: number,
  d: number,
  h: number,
  mi: number,
  s: number,
  timeZone: string,
): number {
  return wallToUtc(Date.UTC(y, mo - 1, d, h, mi, s), timeZone);
}

/** Local calendar date and weekday (0 = Sunday) of an instant in `timeZone`. */
export function localDate(ms: number, timeZone: string): { y: number; m: number; d: number; weekday: number } {
  const shifted = new Date(utcToWall(ms, timeZone));
  return {
    y: shifted.getUTCFullYear(),
    m: shifted.getUTCMonth() + 1,
    d: shifted.getUTCDate(),
    weekday: shifted.getUTCDay(),
  };
}

/** An instant as ISO 8601 with the offset `timeZone` has then: `2026-03-09T09:00:00-07:00`. */
export function zonedIso(ms: number, timeZone: string): string {
  const seconds = Math.floor(ms / 1000) * 1000;
  const offsetMinutes = Math.round(tzOffset(seconds, timeZone) / 60_000);
  const sign = offsetMinutes < 0 ? "-" : "+";
  const abs = Math.abs(offsetMinutes);
  const pad = (n: number) => String(n).padStart(2, "0");
  const local = new Date(seconds + offsetMinutes * 60_000).toISOString().slice(0, 19);
  return `${local}${sign}${pad(Math.floor(abs / 60))}:${pad(abs % 60)}`;
}

export function isTimeZone(tz: string): boolean {
  if (formatters.has(tz)) return true;
  try {
    formatter(tz);
    return true;
  } catch {
    return false;
  }
}
