import ICAL from "ical.js";
import type { FeedZones, Zone } from "./zones";

/** A date or date-time value as written: a wall time (see ../zoned.ts) in the zone it is read in. */
export interface Moment {
  wall: number;
  date: boolean;
  zone: Zone;
}

/** One VEVENT's times and whether it holds time. */
export interface Series {
  start: Moment;
  /** Its length as a wall-clock span, or as elapsed time when it ends in another zone. */
  length: { wall: number } | { exact: number };
  busy: boolean;
}

const VALUE = /^(\d{4})-(\d{2})-(\d{2})(?:T(\d{2}):(\d{2}):(\d{2})(Z)?)?$/;

/**
 * A raw value (ical.js's jCal form, `2026-03-09T09:00:00[Z]` or `2026-03-09`) in its zone:
 * UTC with `Z`, else its TZID's zone, else floating. ical.js's own zone lookup is not used,
 * so no TZID is ever silently read as floating by the library.
 */
export function momentOf(raw: unknown, tzid: unknown, zones: FeedZones): Moment | undefined {
  const m = typeof raw === "string" ? VALUE.exec(raw) : null;
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s, z] = m;
  const date = h === undefined;
  const wall = Date.UTC(Number(y), Number(mo) - 1, Number(d), Number(h ?? 0), Number(mi ?? 0), Number(s ?? 0));
  if (Number.isNaN(wall)) return undefined;
  const zone = z ? zones.utc : typeof tzid === "string" && tzid ? zones.byTzid(tzid) : zones.floating;
  return { wall, date, zone };
}

export const utcOf = (m: Moment) => m.zone.toUtc(m.wall);

/** Where an occurrence of `series` that starts at `at` (instant `startMs`) ends. */
export const endOf = ({ length }: Series, at: Moment, startMs: number) =>
  "wall" in length ? at.zone.toUtc(at.wall + length.wall) : startMs + length.exact;

/** The raw values of a property (EXDATE, RDATE and FREEBUSY may hold several). */
export const rawValues = (prop: ICAL.Property): unknown[] => prop.jCal.slice(3);

/** Milliseconds of an RFC 5545 duration (`PT1H`, `P1D`), days taken as 24 hours. */
export function durationMs(raw: unknown): number | undefined {
  if (typeof raw !== "string" || !/^[+-]?P/.test(raw)) return undefined;
  const seconds = ICAL.Duration.fromString(raw).toSeconds();
  return Number.isFinite(seconds) ? seconds * 1000 : undefined;
}
