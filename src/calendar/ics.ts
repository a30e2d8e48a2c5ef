import { DomainError } from "../lib/errors";
import { checkOutboundUrl, type OutboundPolicy } from "../lib/outbound-url";
import { type CalendarSource, type Interval, providerFetch, providerText } from "./outbound";
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
function parseIcsTime(params: string, value: string): number | undefined {
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

/**
 * Whether a feed URL may be fetched: the outbound policy of webhook receivers (https to a
 * public host; http to this machine only in local development). Checked when the feed is
 * connected (422 `calendar_feed_not_allowed`) and again before every fetch.
 */
export function checkFeedUrl(feedUrl: string, policy: OutboundPolicy): string {
  const verdict = checkOutboundUrl(feedUrl, policy);
  if (!verdict.ok)
    throw new DomainError("calendar_feed_not_allowed", {
      message: `feed_url ${verdict.reason}.`,
      details: { field: "feed_url", reason: verdict.reason },
    });
  return verdict.url;
}

/**
 * A plain ICS feed: busy times are its opaque, confirmed events. Recurrence rules are not
 * expanded. A feed URL the policy refuses at fetch time is 502 `calendar_provider_error`;
 * the feed is read at most `PROVIDER_BODY_LIMIT` bytes.
 */
export function icsSource(feedUrl: string, opts: { policy: OutboundPolicy; timeoutMs?: number }): CalendarSource {
  let cached: Promise<VEvent[]> | undefined;
  const load = () =>
    (cached ??= (async () => {
      const verdict = checkOutboundUrl(feedUrl, opts.policy);
      if (!verdict.ok)
        throw new DomainError("calendar_provider_error", {
          message: `The ics feed URL ${verdict.reason}; connect the calendar again with a public https feed.`,
          details: { provider: "ics", reason: verdict.reason },
        });
      const res = await providerFetch(
        "ics",
        verdict.url,
        { headers: { Accept: "text/calendar" } },
        { timeoutMs: opts.timeoutMs },
      );
      return parseIcs(await providerText("ics", res));
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
