import ICAL from "ical.js";
import type { Interval } from "../outbound";
import { type ExpansionBudget, expandSeries, expansionBudget } from "./expand";
import { durationMs, endOf, type Moment, momentOf, rawValues, type Series, utcOf } from "./values";
import { type FeedZones, feedZones } from "./zones";

/** A parsed feed: one VCALENDAR holding every component the feed sent. */
export interface Feed {
  calendar: ICAL.Component;
}

const DAY = 86_400_000;

/**
 * Reads a feed with ical.js. Several VCALENDARs, or bare components, are read as one
 * calendar. Text ical.js cannot parse throws (the source answers it as a provider error).
 */
export function readFeed(text: string): Feed {
  const parsed: unknown[] = ICAL.parse(text);
  const components = typeof parsed[0] === "string" ? [parsed] : (parsed as unknown[][]);
  const properties: unknown[] = [];
  const children: unknown[] = [];
  for (const c of components) {
    if (c[0] === "vcalendar") {
      properties.push(...(c[1] as unknown[]));
      children.push(...(c[2] as unknown[]));
    } else children.push(c);
  }
  return { calendar: new ICAL.Component(["vcalendar", properties, children]) };
}

function firstMoment(component: ICAL.Component, name: string, zones: FeedZones): Moment | undefined {
  const prop = component.getFirstProperty(name);
  return prop ? momentOf(prop.jCal[3], prop.getParameter("tzid"), zones) : undefined;
}

const upper = (component: ICAL.Component, name: string) => {
  const value = component.getFirstPropertyValue(name);
  return typeof value === "string" ? value.trim().toUpperCase() : undefined;
};

/**
 * A VEVENT's series: DTSTART, then DTEND (or DURATION; else a whole day for a date, nothing
 * for a date-time). Cancelled, transparent and Outlook "free" events hold no time.
 */
function seriesOf(vevent: ICAL.Component, zones: FeedZones): Series | undefined {
  const start = firstMoment(vevent, "dtstart", zones);
  if (!start) return undefined;
  const end = firstMoment(vevent, "dtend", zones);
  let length: Series["length"];
  if (end && end.zone === start.zone) length = { wall: Math.max(0, end.wall - start.wall) };
  else if (end) length = { exact: Math.max(0, utcOf(end) - utcOf(start)) };
  else {
    const duration = durationMs(vevent.getFirstProperty("duration")?.jCal[3]);
    length = { wall: Math.max(0, duration ?? (start.date ? DAY : 0)) };
  }
  const busy =
    upper(vevent, "status") !== "CANCELLED" &&
    upper(vevent, "transp") !== "TRANSPARENT" &&
    upper(vevent, "x-microsoft-cdo-busystatus") !== "FREE";
  return { start, length, busy };
}

const uidOf = (vevent: ICAL.Component) => {
  const uid = vevent.getFirstPropertyValue("uid");
  return typeof uid === "string" ? uid.trim() : undefined;
};

/** FREEBUSY periods of VFREEBUSY blocks, but for FBTYPE=FREE. */
function freeBusyPeriods(calendar: ICAL.Component, zones: FeedZones, budget: ExpansionBudget): Interval[] {
  const out: Interval[] = [];
  for (const block of calendar.getAllSubcomponents("vfreebusy"))
    for (const prop of block.getAllProperties("freebusy")) {
      const type = prop.getParameter("fbtype");
      if (typeof type === "string" && type.trim().toUpperCase() === "FREE") continue;
      for (const period of rawValues(prop)) {
        budget.spend();
        if (!Array.isArray(period)) continue;
        const start = momentOf(period[0], prop.getParameter("tzid"), zones);
        if (!start) continue;
        const end = momentOf(period[1], prop.getParameter("tzid"), zones);
        const startMs = utcOf(start);
        const endMs = end ? utcOf(end) : startMs + (durationMs(period[1]) ?? 0);
        out.push({ start: startMs, end: endMs });
      }
    }
  return out;
}

/**
 * The feed's busy time overlapping [from, to): every occurrence of every opaque, confirmed
 * event (RRULE and RDATE, less EXDATE and the occurrences a RECURRENCE-ID override replaces;
 * each override is then read as its own event) and the busy FREEBUSY periods. Floating
 * times and dates are read in the calendar's zone, else in `fallbackZone`. Throws
 * `calendar_provider_error` when the feed needs more recurrence steps than the bound.
 */
export function feedBusy(feed: Feed, from: number, to: number, fallbackZone: string): Interval[] {
  const zones = feedZones(feed.calendar, fallbackZone);
  const budget = expansionBudget();
  const vevents = feed.calendar.getAllSubcomponents("vevent");
  const replaced = new Map<string, Set<number>>();
  for (const vevent of vevents) {
    const recurrenceId = firstMoment(vevent, "recurrence-id", zones);
    const uid = uidOf(vevent);
    if (!recurrenceId || uid === undefined) continue;
    const set = replaced.get(uid) ?? new Set<number>();
    set.add(utcOf(recurrenceId));
    replaced.set(uid, set);
  }
  const out: Interval[] = [];
  const keep = (block: Interval) => {
    if (block.end > from && block.start < to) out.push(block);
  };
  for (const vevent of vevents) {
    const series = seriesOf(vevent, zones);
    if (!series?.busy) continue;
    // An override is one occurrence, read on its own; a series skips what overrides replace.
    if (vevent.hasProperty("recurrence-id")) {
      budget.spend();
      const start = utcOf(series.start);
      keep({ start, end: endOf(series, series.start, start) });
    } else expandSeries(vevent, series, { from, to, zones, budget, skip: replaced.get(uidOf(vevent) ?? "") }, keep);
  }
  for (const block of freeBusyPeriods(feed.calendar, zones, budget)) keep(block);
  return out;
}

/**
 * The stored event `uid`, as reconciliation asks for it: its series' (else its first
 * override's) DTSTART, unless it is cancelled. Floating times are read in the calendar's
 * zone, else in UTC.
 */
export function feedEventStart(feed: Feed, uid: string): { found: false } | { found: true; start: number | null } {
  const zones = feedZones(feed.calendar, "UTC");
  const matching = feed.calendar.getAllSubcomponents("vevent").filter((e) => uidOf(e) === uid);
  matching.sort((a, b) => Number(a.hasProperty("recurrence-id")) - Number(b.hasProperty("recurrence-id")));
  const event = matching.find((e) => upper(e, "status") !== "CANCELLED");
  if (!event) return { found: false };
  const start = firstMoment(event, "dtstart", zones);
  return { found: true, start: start ? utcOf(start) : null };
}
