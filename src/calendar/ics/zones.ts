import ICAL from "ical.js";
import { isTimeZone, utcToWall, wallToUtc } from "../zoned";
import { ianaForWindowsZone } from "./windows-zones";

/** A clock a feed's times are read in: wall time (see ../zoned.ts) to instant and back. */
export interface Zone {
  toUtc(wall: number): number;
  toWall(ms: number): number;
}

const UTC: Zone = { toUtc: (wall) => wall, toWall: (ms) => ms };

const ianaZone = (name: string): Zone => ({
  toUtc: (wall) => wallToUtc(wall, name),
  toWall: (ms) => utcToWall(ms, name),
});

/** The IANA zone a zone name stands for: an IANA name, a Windows name, or a path ending in one. */
function ianaName(name: string): string | undefined {
  const trimmed = name.trim();
  if (!trimmed) return undefined;
  if (isTimeZone(trimmed)) return trimmed;
  const windows = ianaForWindowsZone(trimmed);
  if (windows) return windows;
  // Lightning and others prefix the IANA name with a path: /mozilla.org/20050126_1/America/New_York.
  const segments = trimmed.split("/").filter(Boolean);
  for (const take of [3, 2]) {
    if (segments.length <= take) continue;
    const tail = segments.slice(-take).join("/");
    if (isTimeZone(tail)) return tail;
  }
  return undefined;
}

/**
 * A VTIMEZONE's own rules, for a TZID that names no zone the runtime knows
 * (Outlook's "Customized Time Zone", for one). ical.js computes its offsets.
 */
function definedZone(component: ICAL.Component): Zone {
  const tz = new ICAL.Timezone(component);
  const offsetMs = (wall: number) => {
    const d = new Date(wall);
    const time = ICAL.Time.fromData({
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
      second: d.getUTCSeconds(),
    });
    return tz.utcOffset(time) * 1000;
  };
  return {
    toUtc: (wall) => wall - offsetMs(wall - offsetMs(wall)),
    toWall: (ms) => ms + offsetMs(ms + offsetMs(ms)),
  };
}

export interface FeedZones {
  /** UTC, for times written with `Z`. */
  utc: Zone;
  /** Floating times and all-day dates: the calendar's own zone, else the zone asked for. */
  floating: Zone;
  /** The zone a TZID names. */
  byTzid(tzid: string): Zone;
}

/**
 * How one feed's times are read. A TZID that names a zone (IANA, a Windows name through the
 * table, or a path ending in an IANA name) is read with the runtime's zone data; else with the
 * rules of the feed's VTIMEZONE of that TZID (or the IANA zone its X-LIC-LOCATION names);
 * a TZID with neither is read as floating. Floating times are in the calendar's
 * X-WR-TIMEZONE when it names a zone, else in `fallbackZone`.
 */
export function feedZones(calendar: ICAL.Component, fallbackZone: string): FeedZones {
  const defined = new Map<string, ICAL.Component>();
  for (const vtz of calendar.getAllSubcomponents("vtimezone")) {
    const tzid = vtz.getFirstPropertyValue("tzid");
    if (typeof tzid === "string" && !defined.has(tzid)) defined.set(tzid, vtz);
  }
  const calendarZone = calendar.getFirstPropertyValue("x-wr-timezone");
  const calendarIana = typeof calendarZone === "string" ? ianaName(calendarZone) : undefined;
  const floating = ianaZone(calendarIana ?? fallbackZone);
  const resolved = new Map<string, Zone>();
  const resolve = (tzid: string): Zone => {
    const name = ianaName(tzid);
    if (name) return ianaZone(name);
    const vtz = defined.get(tzid);
    if (!vtz) return floating;
    const location = vtz.getFirstPropertyValue("x-lic-location");
    const located = typeof location === "string" ? ianaName(location) : undefined;
    return located ? ianaZone(located) : definedZone(vtz);
  };
  return {
    utc: UTC,
    floating,
    byTzid(tzid) {
      let zone = resolved.get(tzid);
      if (!zone) {
        zone = resolve(tzid);
        resolved.set(tzid, zone);
      }
      return zone;
    },
  };
}
