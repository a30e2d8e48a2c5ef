/** Failed attempts in a row that open an endpoint's breaker; a timeout opens it at once. */
export const BREAKER_FAILURES = 3;
/** How long an open breaker pauses an endpoint: 30 s doubling per failure in a row, at most 10 minutes. */
export const BREAKER_FIRST_PAUSE_SECONDS = 30;
const BREAKER_MAX_PAUSE_SECONDS = 600;

/** What an attempt tells the endpoint's breaker: a success closes it, a failure counts (a timeout opens it). */
export type Health = "healthy" | { failed: true; timedOut: boolean };

/**
 * The breaker of each endpoint after a group of its attempts, in the order they ended:
 * `reset` when one succeeded, `failures` those that failed after the last success, and
 * `timeoutAt` the position (1-based) among them of the last that timed out (0: none).
 * Applied in one statement, this is the same as applying the attempts one by one.
 */
function breakerDeltas(outcomes: { endpointId: string; health?: Health }[]) {
  const deltas = new Map<string, { reset: boolean; failures: number; timeoutAt: number }>();
  for (const { endpointId, health } of outcomes) {
    if (!health) continue;
    const d = deltas.get(endpointId) ?? { reset: false, failures: 0, timeoutAt: 0 };
    if (health === "healthy") deltas.set(endpointId, { reset: true, failures: 0, timeoutAt: 0 });
    else {
      d.failures++;
      if (health.timedOut) d.timeoutAt = d.failures;
      deltas.set(endpointId, d);
    }
  }
  return [...deltas].map(([id, d]) => [id, d.reset ? 1 : 0, d.failures, d.timeoutAt]);
}

/**
 * The statement that applies a group of attempts to their endpoints' breakers (none when no
 * attempt made a request). It counts in SQL, so concurrent batches add up: a success resets
 * the count; failures add to it and open the breaker (a pause of 30 s doubling per failure
 * in a row, at most 10 minutes) at BREAKER_FAILURES in a row, or at once on a timeout.
 */
export function breakerStatement(
  d1: D1Database,
  outcomes: { endpointId: string; health?: Health }[],
  now: number,
): D1PreparedStatement | undefined {
  const breakers = breakerDeltas(outcomes);
  if (!breakers.length) return undefined;
  const base = "(CASE WHEN b.reset THEN 0 ELSE webhook_endpoints.consecutive_failures END)";
  // The count before the attempt that opened the breaker: the last one, or else the last timeout.
  const opening = `(CASE WHEN ${base} + b.failures >= ${BREAKER_FAILURES} THEN ${base} + b.failures - 1
      WHEN b.timeout_at > 0 THEN ${base} + b.timeout_at - 1 END)`;
  const pause = `min(${BREAKER_FIRST_PAUSE_SECONDS} << min(${opening}, 16), ${BREAKER_MAX_PAUSE_SECONDS})`;
  return d1
    .prepare(
      `UPDATE webhook_endpoints SET consecutive_failures = ${base} + b.failures,
            paused_until = CASE
              WHEN ${opening} IS NOT NULL
                THEN strftime('%Y-%m-%dT%H:%M:%fZ', (?2 + 1000 * ${pause}) / 1000.0, 'unixepoch')
              WHEN b.reset THEN NULL
              ELSE webhook_endpoints.paused_until END
          FROM (SELECT json_extract(value, '$[0]') AS endpoint_id, json_extract(value, '$[1]') AS reset,
              json_extract(value, '$[2]') AS failures, json_extract(value, '$[3]') AS timeout_at
            FROM json_each(?1)) AS b
          WHERE webhook_endpoints.id = b.endpoint_id
            AND (b.failures > 0 OR webhook_endpoints.consecutive_failures > 0)`,
    )
    .bind(JSON.stringify(breakers), now);
}
