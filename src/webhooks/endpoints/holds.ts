import { nowIso } from "../../lib/ids";

/**
 * The statement that holds the endpoints whose attempts outlive a batch's deadline: each
 * is paused until the batch's lease ends, so no other batch leases or attempts its
 * deliveries while those attempts run, and a hanging receiver costs its own requests
 * only. An endpoint already paused (its breaker is open) keeps its pause.
 */
export function holdStatement(d1: D1Database, endpointIds: string[], lease: string, now: number): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_endpoints SET paused_until = ?2
        WHERE id IN (SELECT value FROM json_each(?1)) AND (paused_until IS NULL OR paused_until <= ?3)`,
    )
    .bind(JSON.stringify(endpointIds), lease, nowIso(now));
}

/**
 * The statement that frees the holds a batch set once its attempts at those endpoints have
 * ended; a pause the breaker set meanwhile (a timeout, failures in a row) stays.
 */
export function freeStatement(d1: D1Database, endpointIds: string[], lease: string): D1PreparedStatement {
  return d1
    .prepare(
      `UPDATE webhook_endpoints SET paused_until = NULL
        WHERE id IN (SELECT value FROM json_each(?1)) AND paused_until = ?2`,
    )
    .bind(JSON.stringify(endpointIds), lease);
}
