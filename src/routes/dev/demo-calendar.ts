import { Hono } from "hono";
import type { AppEnv } from "../../http/env";
import { DomainError } from "../../lib/errors";

export const DEMO_CALENDAR_PATH = "/dev/demo-calendar.ics";

const stamp = (ms: number) =>
  new Date(ms)
    .toISOString()
    .replaceAll(/[-:]/g, "")
    .replace(/\.\d{3}/, "");

/**
 * The demo sandbox's calendar: an ICS feed of a few busy blocks over the coming week,
 * served only in local development so availability works without any external account.
 */
export const demoCalendar = new Hono<AppEnv>().get(DEMO_CALENDAR_PATH, (c) => {
  if (c.env.ENVIRONMENT !== "local") throw new DomainError("request_path_not_found");
  const day = 86_400_000;
  const today = Date.UTC(new Date().getUTCFullYear(), new Date().getUTCMonth(), new Date().getUTCDate());
  const events = [1, 2, 3, 4, 5].map((n) => {
    const start = today + n * day + (16 + (n % 3)) * 3_600_000;
    return [
      "BEGIN:VEVENT",
      `UID:demo-busy-${n}`,
      `DTSTART:${stamp(start)}`,
      `DTEND:${stamp(start + 2 * 3_600_000)}`,
      "SUMMARY:Shoot (busy)",
      "END:VEVENT",
    ].join("\r\n");
  });
  return c.body(
    ["BEGIN:VCALENDAR", "VERSION:2.0", "PRODID:-//ALMS//Demo//EN", ...events, "END:VCALENDAR"].join("\r\n"),
    200,
    { "Content-Type": "text/calendar; charset=utf-8" },
  );
});
