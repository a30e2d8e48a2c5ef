import { newId, nowIso } from "../../lib/ids";
import { breakerStatement, type Health } from "../endpoints/breakers";
import { freeStatement } from "../endpoints/holds";

/** Outcomes written in one group at most; a consumer batch holds at most 100 messages. */
const OUTCOMES_PER_WRITE = 100;

/** One attempt of one delivery, as the delivery log records it. */
export interface AttemptOutcome {
  deliveryId: string;
  endpointId: string;
  /** Numbered per delivery, across replays. */
  attempt: number;
  started: number;
  latencyMs: number;
  status: number | null;
  error: string | null;
  final?: "delivered" | "dead";
  /** Absent when no request was made (the endpoint was removed, its URL refused, its event missing). */
  health?: Health;
}

type Entry = { outcome: AttemptOutcome } | { release: string } | { free: string };

/**
 * The statements that record a group: every attempt in the log, each delivery's state
 * (and its lease freed) only where this batch still holds the lease, so a batch whose
 * lease ran out and was taken over never overwrites the newer result, the leases of
 * deliveries left unattempted freed (likewise), each endpoint's breaker, and the holds of
 * endpoints whose attempts outlived the batch's deadline freed. Rows travel as one JSON
 * parameter per statement, so a group of any size is at most five statements. The breaker counts
 * in the statement, so concurrent batches add up (see breakerStatement).
 */
function groupStatements(d1: D1Database, lease: string, entries: Entry[], now: number): D1PreparedStatement[] {
  const outcomes = entries.flatMap((e) => ("outcome" in e ? [e.outcome] : []));
  const released = entries.flatMap((e) => ("release" in e ? [e.release] : []));
  const freed = entries.flatMap((e) => ("free" in e ? [e.free] : []));
  const at = nowIso(now);
  const statements: D1PreparedStatement[] = [];
  if (outcomes.length) {
    const attempts = outcomes.map((o) => [
      newId("wha"),
      o.deliveryId,
      o.attempt,
      nowIso(o.started),
      o.status,
      o.latencyMs,
      o.error,
    ]);
    statements.push(
      d1
        .prepare(
          `INSERT INTO "webhook_delivery_attempts"
            (id, delivery_id, attempt, attempted_at, response_status, latency_ms, error)
          SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
            json_extract(value, '$[3]'), json_extract(value, '$[4]'), json_extract(value, '$[5]'),
            json_extract(value, '$[6]')
          FROM json_each(?1)`,
        )
        .bind(JSON.stringify(attempts)),
    );
    const deliveries = outcomes.map((o) => [o.deliveryId, o.attempt, o.status, o.error, o.final ?? null]);
    statements.push(
      d1
        .prepare(
          `UPDATE webhook_deliveries SET attempts = o.attempt, last_response_status = o.status,
            last_error = o.error, updated_at = ?2, leased_until = NULL,
            status = coalesce(o.final, webhook_deliveries.status),
            delivered_at = CASE WHEN o.final = 'delivered' THEN ?2 ELSE webhook_deliveries.delivered_at END
          FROM (SELECT json_extract(value, '$[0]') AS delivery_id, json_extract(value, '$[1]') AS attempt,
              json_extract(value, '$[2]') AS status, json_extract(value, '$[3]') AS error,
              json_extract(value, '$[4]') AS final
            FROM json_each(?1)) AS o
          WHERE webhook_deliveries.id = o.delivery_id AND webhook_deliveries.leased_until = ?3`,
        )
        .bind(JSON.stringify(deliveries), at, lease),
    );
  }
  if (released.length)
    statements.push(
      d1
        .prepare(
          `UPDATE webhook_deliveries SET leased_until = NULL
          WHERE id IN (SELECT value FROM json_each(?1)) AND leased_until = ?2`,
        )
        .bind(JSON.stringify(released), lease),
    );
  const breakers = breakerStatement(d1, outcomes, now);
  if (breakers) statements.push(breakers);
  // After the breakers: a pause an attempt of this group opened is not freed.
  if (freed.length) statements.push(freeStatement(d1, freed, lease));
  return statements;
}

async function write(d1: D1Database, lease: string, entries: Entry[]) {
  const statements = groupStatements(d1, lease, entries, Date.now());
  if (statements.length) await d1.batch(statements);
}

/**
 * Records a consumer batch's outcomes in groups: whatever ended while the previous group
 * was being written goes in the next one, one `db.batch` (at most five statements) each,
 * so D1 sees a few round trips per batch rather than several per delivery. `record` and
 * `release` resolve once their row is written: a message is settled only after that. A
 * group that D1 refuses is written again one entry at a time, so only the entries whose
 * own write fails are refused (their deliveries' leases are freed if D1 allows, or expire).
 */
export function outcomeWriter(d1: D1Database, lease: string) {
  const waiting: { entry: Entry; done: (err?: unknown) => void }[] = [];
  let writing = false;

  const drain = async () => {
    // Outcomes that end in the same turn of the event loop share a group.
    await new Promise((resolve) => setTimeout(resolve, 0));
    while (waiting.length) {
      const group = waiting.splice(0, OUTCOMES_PER_WRITE);
      try {
        await write(
          d1,
          lease,
          group.map((g) => g.entry),
        );
        for (const g of group) g.done();
      } catch {
        for (const g of group) {
          try {
            await write(d1, lease, [g.entry]);
            g.done();
          } catch (err) {
            if (!("free" in g.entry)) {
              const id = "outcome" in g.entry ? g.entry.outcome.deliveryId : g.entry.release;
              await write(d1, lease, [{ release: id }]).catch(() => undefined);
            }
            g.done(err);
          }
        }
      }
    }
    writing = false;
  };

  const submit = (entry: Entry) =>
    new Promise<void>((resolve, reject) => {
      waiting.push({ entry, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (!writing) {
        writing = true;
        void drain();
      }
    });

  return {
    /** Records an attempt (and frees its delivery's lease). */
    record: (outcome: AttemptOutcome) => submit({ outcome }),
    /** Frees the lease of a delivery this batch took but did not attempt. */
    release: (deliveryId: string) => submit({ release: deliveryId }),
    /** Frees the hold this batch set on an endpoint whose attempts outlived its deadline (see endpoints/holds.ts). */
    free: (endpointId: string) => submit({ free: endpointId }),
  };
}

/** A consumer batch's outcome writer. */
export type OutcomeWriter = ReturnType<typeof outcomeWriter>;
