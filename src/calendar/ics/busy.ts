import { DomainError } from "../../lib/errors";
import { checkOutboundUrl, type OutboundPolicy } from "../../lib/outbound-url";
import { type CalendarSource, providerFetch, providerText } from "../outbound";
import { type Feed, feedBusy, feedEventStart, readFeed } from "./feed";

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
 * A plain ICS feed, read with ical.js: busy times are the occurrences of its opaque,
 * confirmed events and its busy FREEBUSY periods (see feed.ts). A feed URL the policy
 * refuses at fetch time is 502 `calendar_provider_error`; the feed is read at most
 * `PROVIDER_BODY_LIMIT` bytes.
 */
export function icsSource(feedUrl: string, opts: { policy: OutboundPolicy; timeoutMs?: number }): CalendarSource {
  let cached: Promise<Feed> | undefined;
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
      return readFeed(await providerText("ics", res));
    })());
  return {
    async busy(from, to, timeZone) {
      return feedBusy(await load(), from.getTime(), to.getTime(), timeZone ?? "UTC");
    },
    async event(uid) {
      const e = feedEventStart(await load(), uid);
      if (!e.found) return e;
      return { found: true, start: e.start === null ? null : new Date(e.start).toISOString() };
    },
  };
}
