import { DomainError } from "../lib/errors";

export const PROVIDER_TIMEOUT_MS = 8_000;

/**
 * A call to a calendar provider that never hangs and never becomes a 500: a timeout is
 * 504 `calendar_provider_timeout`, a network failure or an unexpected answer 502
 * `calendar_provider_error`. `accept` lists statuses the caller handles itself (e.g. 404).
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
    res = await fetch(url, { ...init, redirect: "follow", signal: AbortSignal.timeout(timeoutMs) });
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

export interface Interval {
  start: number;
  end: number;
}

/** A stored event as the calendar holds it: absent, present with a start, or present but unreadable. */
export type CalendarEvent = { found: false } | { found: true; start: string | null };

export interface CalendarSource {
  busy(from: Date, to: Date): Promise<Interval[]>;
  event(eventId: string): Promise<CalendarEvent>;
}

/** Wraps a source so that anything unexpected from the provider (an unreadable body, a missing field) is a 502, never a 500. */
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
