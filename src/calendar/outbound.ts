import { readCapped } from "../lib/capped-read";
import { DomainError } from "../lib/errors";
import { outboundTraceparent } from "../lib/telemetry/trace";

const PROVIDER_TIMEOUT_MS = 8_000;

/** The largest provider answer read: an ICS feed of years of events fits; anything bigger is refused. */
export const PROVIDER_BODY_LIMIT = 5 * 1024 * 1024;

/**
 * A call to a calendar provider that never hangs and never becomes a 500: a timeout is
 * 504 `calendar_provider_timeout`, a network failure or an unexpected answer 502
 * `calendar_provider_error`. Redirects are not followed (a 3xx is an unexpected answer).
 * `accept` lists statuses the caller handles itself (e.g. 404). Each call carries a
 * `traceparent` of its own in the current trace.
 */
export async function providerFetch(
  provider: string,
  url: string,
  init: RequestInit,
  opts: { timeoutMs?: number; accept?: number[] } = {},
): Promise<Response> {
  const timeoutMs = opts.timeoutMs ?? PROVIDER_TIMEOUT_MS;
  let res: Response;
  try {
    const headers = new Headers(init.headers);
    const traceparent = outboundTraceparent();
    if (traceparent) headers.set("traceparent", traceparent);
    res = await fetch(url, { ...init, headers, redirect: "manual", signal: AbortSignal.timeout(timeoutMs) });
  } catch (e) {
    if (e instanceof Error && (e.name === "TimeoutError" || e.name === "AbortError")) {
      throw new DomainError("calendar_provider_timeout", {
        message: `The ${provider} calendar did not answer within ${timeoutMs / 1000} s.`,
        details: { provider, timeout_ms: timeoutMs },
      });
    }
    throw new DomainError("calendar_provider_error", {
      message: `The ${provider} calendar could not be reached.`,
      details: { provider },
    });
  }
  if (!res.ok && !(opts.accept ?? []).includes(res.status)) {
    await res.body?.cancel();
    throw new DomainError("calendar_provider_error", {
      message: `The ${provider} calendar answered ${res.status}.`,
      details: { provider, provider_status: res.status },
    });
  }
  return res;
}

/** A provider's answer as text, read at most `limit` bytes: past it, 502 `calendar_provider_error`. */
export async function providerText(provider: string, res: Response, limit = PROVIDER_BODY_LIMIT): Promise<string> {
  const bytes = await readCapped(res.body, limit);
  if (!bytes) {
    throw new DomainError("calendar_provider_error", {
      message: `The ${provider} calendar answered more than ${limit} bytes.`,
      details: { provider, limit_bytes: limit },
    });
  }
  return new TextDecoder().decode(bytes);
}

export interface Interval {
  start: number;
  end: number;
}

/** A stored event as the calendar holds it: absent, present with a start, or present but unreadable. */
export type CalendarEvent = { found: false } | { found: true; start: string | null };

export interface CalendarSource {
  /** Busy time overlapping [from, to); `timeZone` is the zone asked for, which reads an ICS feed's floating times. */
  busy(from: Date, to: Date, timeZone?: string): Promise<Interval[]>;
  event(eventId: string): Promise<CalendarEvent>;
}

/**
 * Wraps a source so that anything unexpected from the provider (an unreadable body, a missing
 * field) is a 502, never a 500.
 */
export function guarded(provider: string, source: CalendarSource): CalendarSource {
  const wrap =
    <A extends unknown[], R>(fn: (...a: A) => Promise<R>) =>
    async (...a: A): Promise<R> => {
      try {
        return await fn(...a);
      } catch (e) {
        if (e instanceof DomainError) throw e;
        throw new DomainError("calendar_provider_error", {
          message: `The ${provider} calendar gave an answer that could not be read.`,
          details: { provider },
        });
      }
    };
  return { busy: wrap(source.busy), event: wrap(source.event) };
}
