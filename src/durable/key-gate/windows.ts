import { MAX_BUDGET, WINDOW_MS } from "../../domain/budgets";
import { SlidingLog } from "../../lib/sliding-log";
import type { RateDecision } from "./verdict";

/**
 * Admitted requests are written as per-second counts at most this long after they were
 * counted: a restart of the object forgets at most the requests of the last interval. Each
 * write is an alarm of the key's gate, so the interval is what every active key costs in
 * alarms; five seconds is also the length of a budget lease, whose end needs an alarm anyway.
 */
const WINDOW_FLUSH_MS = 5_000;

/**
 * An exact 60-second sliding window per endpoint name, in memory, written to the object's
 * storage as per-second counts once per WINDOW_FLUSH_MS and read back when it starts.
 */
export class RateWindows {
  #windows = new Map<string, SlidingLog>();
  /** Admitted requests not written yet: endpoint → epoch second → count. */
  #pending = new Map<string, Map<number, number>>();
  /** When the oldest count not written yet was taken (epoch ms). */
  #pendingSince: number | undefined;

  constructor(private readonly sql: SqlStorage) {
    sql.exec(
      "CREATE TABLE IF NOT EXISTS window_counts " +
        "(endpoint TEXT NOT NULL, second INTEGER NOT NULL, n INTEGER NOT NULL, PRIMARY KEY (endpoint, second))",
    );
    const since = Date.now() - WINDOW_MS;
    sql.exec("DELETE FROM window_counts WHERE second < ?", Math.floor(since / 1000));
    for (const row of sql.exec<{ endpoint: string; second: number; n: number }>(
      "SELECT endpoint, second, n FROM window_counts ORDER BY second",
    )) {
      // Counted at the end of their second: a restored request leaves the window at most 1 s late.
      const at = row.second * 1000 + 999;
      if (at <= since) continue;
      const window = this.#window(row.endpoint);
      for (let i = 0; i < Math.min(row.n, MAX_BUDGET); i++) window.push(at);
    }
  }

  /** Requests of `endpoint` still in its window at `now`. */
  size(endpoint: string, now: number): number {
    const window = this.#window(endpoint);
    window.evict(now - WINDOW_MS);
    return window.size;
  }

  /** Requests of `endpoint` counted after `since`. */
  countSince(endpoint: string, since: number): number {
    return this.#window(endpoint).countSince(since);
  }

  /** The window of `endpoint` as it stands, counting nothing. */
  peek(endpoint: string, limit: number, now: number): RateDecision {
    const window = this.#window(endpoint);
    window.evict(now - WINDOW_MS);
    return {
      limit,
      remaining: Math.max(0, limit - window.size),
      // The window has fully refilled a window after its newest request.
      reset: Math.ceil(((window.newest() ?? now - WINDOW_MS) + WINDOW_MS) / 1000),
    };
  }

  /** Counts a request in the window of `endpoint`, or refuses it with when one fits again. */
  hit(endpoint: string, limit: number, now: number): RateDecision {
    const window = this.#window(endpoint);
    window.evict(now - WINDOW_MS);
    const count = window.size;
    if (count >= limit) {
      // The oldest request still counted leaves the window first.
      const frees = window.at(count - limit)! + WINDOW_MS;
      return {
        limit,
        remaining: 0,
        reset: Math.ceil((window.newest()! + WINDOW_MS) / 1000),
        retryAfter: Math.max(1, Math.ceil((frees - now) / 1000)),
      };
    }
    window.push(now);
    this.#note(endpoint, now);
    return { limit, remaining: limit - count - 1, reset: Math.ceil((now + WINDOW_MS) / 1000) };
  }

  /** When the counts not written yet are due to be written; undefined when there are none. */
  flushDue(): number | undefined {
    return this.#pendingSince === undefined ? undefined : this.#pendingSince + WINDOW_FLUSH_MS;
  }

  /** Writes the counts gathered since the last write, one statement per endpoint and second. */
  flush(now: number): void {
    const pending = this.#pending;
    this.#pending = new Map();
    this.#pendingSince = undefined;
    for (const [endpoint, seconds] of pending) {
      for (const [second, n] of seconds) {
        this.sql.exec(
          "INSERT INTO window_counts (endpoint, second, n) VALUES (?, ?, ?) " +
            "ON CONFLICT (endpoint, second) DO UPDATE SET n = n + excluded.n",
          endpoint,
          second,
          n,
        );
      }
    }
    this.sql.exec("DELETE FROM window_counts WHERE second < ?", Math.floor((now - WINDOW_MS) / 1000));
  }

  #window(endpoint: string): SlidingLog {
    let window = this.#windows.get(endpoint);
    if (!window) {
      window = new SlidingLog();
      this.#windows.set(endpoint, window);
    }
    return window;
  }

  #note(endpoint: string, now: number): void {
    const second = Math.floor(now / 1000);
    let seconds = this.#pending.get(endpoint);
    if (!seconds) {
      seconds = new Map();
      this.#pending.set(endpoint, seconds);
    }
    seconds.set(second, (seconds.get(second) ?? 0) + 1);
    this.#pendingSince ??= Date.now();
  }
}
