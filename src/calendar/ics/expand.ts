import ICAL from "ical.js";
import { DomainError } from "../../lib/errors";
import type { Interval } from "../outbound";
import { durationMs, endOf, type Moment, momentOf, rawValues, type Series, utcOf } from "./values";
import type { FeedZones } from "./zones";

/**
 * Recurrence steps one question may take across a whole feed: every candidate a rule tests,
 * every occurrence it yields, every RDATE and FREEBUSY period. Past it the feed is refused.
 */
export const MAX_EXPANSION_STEPS = 50_000;

const DAY = 86_400_000;
// A wall time and its instant are less than a day apart (offsets stay within ±14 h).
const MARGIN = 2 * DAY;
// Rules whose candidates are a fixed wall-clock period apart: a series that started long
// before the range is moved forward by whole periods, so old series cost no steps.
const PERIOD_MS = new Map([
  ["SECONDLY", 1000],
  ["MINUTELY", 60_000],
  ["HOURLY", 3_600_000],
  ["DAILY", DAY],
  ["WEEKLY", 7 * DAY],
]);

export interface ExpansionBudget {
  spend(): void;
}

export function expansionBudget(limit = MAX_EXPANSION_STEPS): ExpansionBudget {
  let steps = 0;
  return {
    spend() {
      if (++steps <= limit) return;
      throw new DomainError("calendar_provider_error", {
        message: `The ics feed needs more than ${limit} recurrence steps for this range, so it is not read.`,
        details: { provider: "ics", limit_steps: limit },
      });
    },
  };
}

export interface Expansion {
  from: number;
  to: number;
  zones: FeedZones;
  budget: ExpansionBudget;
  /** Instants of the occurrences that overrides replace. */
  skip?: Set<number>;
}

const timeOf = (wall: number, isDate: boolean) => {
  const d = new Date(wall);
  return ICAL.Time.fromData({
    year: d.getUTCFullYear(),
    month: d.getUTCMonth() + 1,
    day: d.getUTCDate(),
    hour: isDate ? 0 : d.getUTCHours(),
    minute: isDate ? 0 : d.getUTCMinutes(),
    second: isDate ? 0 : d.getUTCSeconds(),
    isDate,
  });
};
const wallOf = (t: ICAL.Time) => Date.UTC(t.year, t.month - 1, t.day, t.hour, t.minute, t.second);
const dayOf = (wall: number) => wall - (((wall % DAY) + DAY) % DAY);

/**
 * The occurrences of one VEVENT that may overlap [from, to): DTSTART, RDATEs and each
 * RRULE's occurrences (in the wall time of DTSTART's zone, as RFC 5545 counts them), less
 * EXDATEs and `skip`. Rules are iterated by ical.js, only up to the end of the range.
 */
export function expandSeries(
  vevent: ICAL.Component,
  series: Series,
  x: Expansion,
  keep: (block: Interval) => void,
): void {
  const { start, length } = series;
  const span = "wall" in length ? length.wall : length.exact;
  const lo = x.from - MARGIN;
  const hi = x.to + MARGIN;
  const excluded = new Set(x.skip);
  const excludedDays = new Set<number>();
  for (const prop of vevent.getAllProperties("exdate"))
    for (const raw of rawValues(prop)) {
      const m = momentOf(raw, prop.getParameter("tzid"), x.zones);
      if (m?.date && !start.date) excludedDays.add(m.wall);
      else if (m) excluded.add(utcOf(m));
    }
  const seen = new Set<number>();
  const offer = (at: Moment, endMs?: number) => {
    x.budget.spend();
    if (endMs === undefined && (at.wall + span < lo || at.wall > hi)) return;
    const startMs = utcOf(at);
    if (seen.has(startMs) || excluded.has(startMs) || (!at.date && excludedDays.has(dayOf(at.wall)))) return;
    seen.add(startMs);
    keep({ start: startMs, end: endMs ?? endOf(series, at, startMs) });
  };
  offer(start);
  for (const prop of vevent.getAllProperties("rdate"))
    for (const raw of rawValues(prop)) {
      const tzid = prop.getParameter("tzid");
      const at = momentOf(Array.isArray(raw) ? raw[0] : raw, tzid, x.zones);
      if (!at) continue;
      if (!Array.isArray(raw)) offer(at);
      else {
        const end = momentOf(raw[1], tzid, x.zones);
        offer(at, end ? utcOf(end) : utcOf(at) + (durationMs(raw[1]) ?? 0));
      }
    }
  for (const prop of vevent.getAllProperties("rrule")) {
    const rule = (prop.getFirstValue() as ICAL.Recur).clone();
    // UNTIL is compared in DTSTART's wall time; a UTC UNTIL is moved into it first.
    let until = hi;
    const written = momentOf((prop.jCal[3] as { until?: unknown }).until, undefined, x.zones);
    if (written) {
      let wall = written.zone === x.zones.utc ? start.zone.toWall(written.wall) : written.wall;
      if (written.date && !start.date) wall += DAY - 1000;
      until = Math.min(until, wall);
    }
    if (until + span < lo) continue;
    rule.until = timeOf(until, start.date);
    let first = start.wall;
    const period = (PERIOD_MS.get(rule.freq) ?? 0) * Math.max(1, rule.interval || 1);
    // Moved to at least one period before anything that could reach the range: the moved
    // start is yielded even if the rule's BY parts would reject it, but it falls outside.
    if (period && !rule.count) {
      const periods = Math.floor((lo - span - first) / period) - 1;
      if (periods > 0) first += periods * period;
    }
    const iterator = rule.iterator(timeOf(first, start.date));
    const check = iterator.check_contracting_rules.bind(iterator);
    iterator.check_contracting_rules = () => {
      x.budget.spend();
      return check();
    };
    for (let t = iterator.next(); t; t = iterator.next()) {
      const wall = wallOf(t);
      if (wall > hi) break;
      offer({ wall, date: start.date, zone: start.zone });
    }
  }
}
