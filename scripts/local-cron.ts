// The Cron triggers of wrangler.jsonc, fired on their schedules against a local `wrangler dev`
// started with --test-scheduled: locally nothing else runs them, so without this the
// retries, sweeps and reconciliation of a deployed environment would never run.
import { readFileSync } from "node:fs";

/** The `triggers.crons` of the top-level environment, read from wrangler.jsonc. */
export function configuredCrons(file = "wrangler.jsonc"): string[] {
  const match = /"crons"\s*:\s*\[([^\]]*)\]/.exec(readFileSync(file, "utf8"));
  if (!match) return [];
  return [...match[1]!.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
}

/** Whether one field of a cron expression (`*`, `*\/n`, `a`, `a-b`, lists of these) admits `value`. */
function fieldMatches(field: string, value: number): boolean {
  return field.split(",").some((part) => {
    const [range, step] = part.split("/") as [string, string | undefined];
    const every = step === undefined ? 1 : Number(step);
    if (!Number.isInteger(every) || every < 1) return false;
    let from: number;
    let to: number;
    if (range === "*") [from, to] = [0, Number.MAX_SAFE_INTEGER];
    else if (range.includes("-")) [from, to] = range.split("-").map(Number) as [number, number];
    else [from, to] = [Number(range), step === undefined ? Number(range) : Number.MAX_SAFE_INTEGER];
    return value >= from && value <= to && (value - (range === "*" ? 0 : from)) % every === 0;
  });
}

/** Whether a five-field cron expression fires at `at` (UTC, as Cloudflare's Cron triggers are). */
export function cronFires(expression: string, at: Date): boolean {
  const fields = expression.trim().split(/\s+/);
  if (fields.length !== 5) return false;
  const [minute, hour, day, month, weekday] = fields as [string, string, string, string, string];
  return (
    fieldMatches(minute, at.getUTCMinutes()) &&
    fieldMatches(hour, at.getUTCHours()) &&
    fieldMatches(day, at.getUTCDate()) &&
    fieldMatches(month, at.getUTCMonth() + 1) &&
    fieldMatches(weekday, at.getUTCDay())
  );
}

/**
 * Fires each cron at the start of every minute it matches, one run at a time per cron (a run
 * still going when its next minute comes is not started twice). A local minute lasts
 * `minuteMs` (60 s, as deployed; shorter runs the schedule on a faster clock, which starts at
 * the current time). Returns a function that stops it.
 */
export function runLocalCron(
  origin: string,
  crons: string[],
  print: (line: string) => void,
  minuteMs = 60_000,
): () => void {
  const running = new Set<string>();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const fire = async (cron: string, at: Date) => {
    if (running.has(cron)) return;
    running.add(cron);
    const started = Date.now();
    try {
      const url = `${origin}/__scheduled?cron=${encodeURIComponent(cron)}&time=${at.getTime()}`;
      const res = await fetch(url, { signal: AbortSignal.timeout(15 * 60_000) });
      await res.arrayBuffer();
      print(`Cron "${cron}" ran locally: ${res.status} in ${Date.now() - started} ms.`);
    } catch (err) {
      print(`Cron "${cron}" could not run locally: ${(err as Error).message}`);
    } finally {
      running.delete(cron);
    }
  };
  const speed = 60_000 / minuteMs;
  const startedAt = Date.now();
  /** The schedule's clock: the wall clock, run `speed` times as fast from the start. */
  const now = () => startedAt + (Date.now() - startedAt) * speed;
  let last = 0;
  const next = () => {
    // Just past the next minute of the schedule's clock (50 ms of wall time past it at most).
    timer = setTimeout(tick, (60_000 - (now() % 60_000)) / speed + Math.min(50, 50 / speed + 2));
  };
  const tick = () => {
    const minute = Math.floor(now() / 60_000) * 60_000;
    // A timer that fired a hair early finds the minute already run: it waits for the next.
    if (minute > last) {
      last = minute;
      for (const cron of crons) if (cronFires(cron, new Date(minute))) void fire(cron, new Date(minute));
    }
    next();
  };
  next();
  return () => clearTimeout(timer);
}
