import { type CalendarSource, providerFetch, providerText } from "./outbound";

export interface GoogleCredentials {
  client_id: string;
  refresh_token: string;
  access_token?: string;
  /** Epoch ms. */
  access_token_expires_at?: number;
}

const TOKEN_URL = "https://oauth2.googleapis.com/token";
const API = "https://www.googleapis.com/calendar/v3";

/**
 * Google Calendar through freeBusy and events.get. An access token close to expiry is
 * refreshed first, and the refreshed credentials are handed to `save`.
 */
export function googleSource(
  calendarId: string,
  creds: GoogleCredentials,
  opts: { clientSecret?: string; timeoutMs?: number; save: (c: GoogleCredentials) => Promise<void> },
): CalendarSource {
  let token: Promise<string> | undefined;
  const accessToken = () =>
    (token ??= (async () => {
      if (creds.access_token && (creds.access_token_expires_at ?? 0) > Date.now() + 60_000) return creds.access_token;
      const body = new URLSearchParams({
        client_id: creds.client_id,
        client_secret: opts.clientSecret ?? "",
        refresh_token: creds.refresh_token,
        grant_type: "refresh_token",
      });
      const res = await providerFetch(
        "google",
        TOKEN_URL,
        { method: "POST", headers: { "Content-Type": "application/x-www-form-urlencoded" }, body },
        { timeoutMs: opts.timeoutMs },
      );
      const json = JSON.parse(await providerText("google", res)) as { access_token?: string; expires_in?: number };
      if (!json.access_token) throw new Error("token refresh answered no access_token");
      const refreshed = {
        ...creds,
        access_token: json.access_token,
        access_token_expires_at: Date.now() + (json.expires_in ?? 3600) * 1000,
      };
      await opts.save(refreshed);
      return json.access_token;
    })());
  return {
    async busy(from, to) {
      const res = await providerFetch(
        "google",
        `${API}/freeBusy`,
        {
          method: "POST",
          headers: { Authorization: `Bearer ${await accessToken()}`, "Content-Type": "application/json" },
          body: JSON.stringify({ timeMin: from.toISOString(), timeMax: to.toISOString(), items: [{ id: calendarId }] }),
        },
        { timeoutMs: opts.timeoutMs },
      );
      const json = JSON.parse(await providerText("google", res)) as {
        calendars?: Record<string, { busy?: { start: string; end: string }[]; errors?: unknown[] }>;
      };
      const cal = json.calendars && Object.hasOwn(json.calendars, calendarId) ? json.calendars[calendarId] : undefined;
      if (!cal || cal.errors?.length) throw new Error("freeBusy answered without this calendar");
      return (cal.busy ?? []).map((b) => ({ start: Date.parse(b.start), end: Date.parse(b.end) }));
    },
    async event(eventId) {
      const res = await providerFetch(
        "google",
        `${API}/calendars/${encodeURIComponent(calendarId)}/events/${encodeURIComponent(eventId)}`,
        { headers: { Authorization: `Bearer ${await accessToken()}` } },
        { timeoutMs: opts.timeoutMs, accept: [404, 410] },
      );
      if (res.status === 404 || res.status === 410) return { found: false };
      const json = JSON.parse(await providerText("google", res)) as {
        status?: string;
        start?: { dateTime?: string; date?: string };
      };
      if (json.status === "cancelled") return { found: false };
      const start = json.start?.dateTime ?? (json.start?.date ? `${json.start.date}T00:00:00.000Z` : undefined);
      return { found: true, start: start && !Number.isNaN(Date.parse(start)) ? new Date(start).toISOString() : null };
    },
  };
}
