import { type CalendarSource, type Interval, providerFetch } from "./outbound";
import { isTimeZone, zonedToUtc } from "./zoned";

interface VEvent {
  uid?: string;
  start?: number;
  end?: number;
  cancelled: boolean;
  transparent: boolean;
}

/** Unfolded content lines (RFC 5545 §3.1). */
const unfold = (text: string) => text.replace(/\r?\n[ \t]/g, "").split(/\r?\n/);

/** DTSTART/DTEND value to epoch ms: UTC (`Z`), with TZID, floating (taken as UTC), or an all-day date. */
export function parseIcsTime(params: string, value: string): number | undefined {
  const tzid = /TZID=([^;:]+)/i.exec(params)?.[1];
  const m = /^(\d{4})(\d{2})(\d{2})(?:T(\d{2})(\d{2})(\d{2})(Z)?)?$/.exec(value.trim());
  if (!m) return undefined;
  const [, y, mo, d, h = "00", mi = "00", s = "00", z] = m;
  const parts = [Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)] as const;
  if (z || !tzid || !isTimeZone(tzid)) return Date.UTC(parts[0], parts[1] - 1, parts[2], parts[3], parts[4], parts[5]);
  return zonedToUtc(...parts, tzid);
}

export function parseIcs(text: string): VEvent[] {
  const events: VEvent[] = [];
  let current: VEvent | undefined;
  for (const line of unfold(text)) {
    if (line === "BEGIN:VEVENT") current = { cancelled: false, transparent: false };
    else if (line === "END:VEVENT" && current) {
      events.push(current);
      current = undefined;
    } else if (current) {
      const colon = line.indexOf(":");
      if (colon < 0) continue;
      const [name, ...params] = line.slice(0, colon).split(";");
      const value = line.slice(colon + 1);
      const p = params.join(";");
      switch (name?.toUpperCase()) {
        case "UID":
          current.uid = value.trim();
          break;
        case "DTSTART":
          current.start = parseIcsTime(p, value);
          break;
        case "DTEND":
          current.end = parseIcsTime(p, value);
          break;
        case "STATUS":
          current.cancelled = value.trim().toUpperCase() === "CANCELLED";
          break;
        case "TRANSP":
          current.transparent = value.trim().toUpperCase() === "TRANSPARENT";
          break;
      }
    }
  }
  return events;
}

/** A plain ICS feed: busy times are its opaque, confirmed events. Recurrence rules are not expanded. */
export function icsSource(feedUrl: string, timeoutMs?: number): CalendarSource {
  let cached: Promise<VEvent[]> | undefined;
  const load = () =>
    (cached ??= (async () => {
      const res = await providerFetch("ics", feedUrl, { headers: { Accept: "text/calendar" } }, { timeoutMs });
      return parseIcs(await res.text());
    })());
  return {
    async busy(from, to) {
      const out: Interval[] = [];
      for (const e of await load()) {
        if (e.cancelled || e.transparent || e.start === undefined) continue;
        const end = e.end ?? e.start;
        if (end > from.getTime() && e.start < to.getTime()) out.push({ start: e.start, end });
      }
      return out;
    },
    async event(uid) {
      const e = (await load()).find((x) => x.uid === uid && !x.cancelled);
      if (!e) return { found: false };
      return { found: true, start: e.start === undefined ? null : new Date(e.start).toISOString() };
    },
  };
}
