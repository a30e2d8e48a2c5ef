import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { nowIso } from "../../lib/ids";

/** Events one drain claims at most. With 16 endpoints an agency, that is at most 800 deliveries. */
export const PAGE_EVENTS = 50;
/** One agency's share of a page: a burst takes at most half, whatever else is waiting. */
export const AGENCY_EVENTS_PER_PAGE = 25;
/** Agencies a claim looks at; a page cannot give a first turn to more agencies than it has events. */
const AGENCIES_PER_PAGE = PAGE_EVENTS;
/** How long a drain holds the events it claimed; a drain that dies releases them by expiry. */
export const CLAIM_SECONDS = 60;

/** Where the next claim starts its walk over agencies, so every agency gets turns when many wait. */
let rotation = "";

export interface ClaimedEvent {
  id: string;
  agency_id: string;
  event_type: string;
  created_at: string;
  data: string;
  attempts: number;
  /** The writer's `traceparent`; null for events written before traces were kept. */
  trace_parent: string | null;
}

/**
 * Claims a page of unsent events in one statement, round-robin across agencies: every
 * agency with unsent events (up to AGENCIES_PER_PAGE of them, starting after the last
 * agency the previous claim reached) offers its oldest unclaimed events, at most
 * AGENCY_EVENTS_PER_PAGE; the page takes every agency's first turn, then every second
 * turn, oldest first within a turn. The walk over agencies is one index seek per agency
 * (events_unsent), so the statement reads about AGENCIES_PER_PAGE × AGENCY_EVENTS_PER_PAGE
 * rows however long the outbox is. D1 runs writes one at a time, so concurrent drains in
 * other isolates never claim the same event.
 */
export function claimStatement(now: number, after: string): SQL {
  const unsent = sql`enqueued_at IS NULL AND set_aside_at IS NULL
    AND (claimed_until IS NULL OR claimed_until < ${nowIso(now)})`;
  return sql`
    WITH RECURSIVE
      later(agency_id, n) AS (
        SELECT (SELECT min(agency_id) FROM events WHERE ${unsent} AND agency_id > ${after}), 1
        UNION ALL
        SELECT (SELECT min(agency_id) FROM events WHERE ${unsent} AND agency_id > later.agency_id), n + 1
        FROM later WHERE agency_id IS NOT NULL AND n < ${AGENCIES_PER_PAGE}
      ),
      earlier(agency_id, n) AS (
        SELECT (SELECT min(agency_id) FROM events WHERE ${unsent} AND agency_id <= ${after}), 1
        UNION ALL
        SELECT (SELECT min(agency_id) FROM events
                WHERE ${unsent} AND agency_id > earlier.agency_id AND agency_id <= ${after}), n + 1
        FROM earlier WHERE agency_id IS NOT NULL AND n < ${AGENCIES_PER_PAGE}
      ),
      busy(agency_id) AS (
        SELECT agency_id FROM (
          SELECT agency_id, n FROM later WHERE agency_id IS NOT NULL
          UNION ALL
          SELECT agency_id, n + ${AGENCIES_PER_PAGE} FROM earlier WHERE agency_id IS NOT NULL
        ) ORDER BY n LIMIT ${AGENCIES_PER_PAGE}
      ),
      offered AS (
        SELECT e.id, e.created_at,
          row_number() OVER (PARTITION BY e.agency_id ORDER BY e.created_at, e.id) AS turn
        FROM busy b JOIN events e ON e.id IN (
          -- The partial index holds unsent events only; the events API's (agency_id, created_at, id)
          -- index would also walk every event the agency was ever sent.
          SELECT u.id FROM events u INDEXED BY events_unsent
          WHERE u.agency_id = b.agency_id AND u.enqueued_at IS NULL AND u.set_aside_at IS NULL
            AND (u.claimed_until IS NULL OR u.claimed_until < ${nowIso(now)})
          ORDER BY u.created_at, u.id LIMIT ${AGENCY_EVENTS_PER_PAGE}
        )
      )
    UPDATE events SET claimed_until = ${nowIso(now + CLAIM_SECONDS * 1000)}
    WHERE id IN (SELECT id FROM offered ORDER BY turn, created_at, id LIMIT ${PAGE_EVENTS})
    RETURNING id, agency_id, event_type, created_at, data, attempts, trace_parent`;
}

/** Claims the next page (see claimStatement) and moves the rotation on; the page comes oldest first. */
export async function claimPage(db: Db, now: number): Promise<ClaimedEvent[]> {
  const after = rotation;
  const claimed = await db.all<ClaimedEvent>(claimStatement(now, after));
  const agencies = [...new Set(claimed.map((e) => e.agency_id))].sort();
  // The walk went up from `after`, then wrapped around to the start: the last agency it reached.
  rotation = agencies.filter((a) => a <= after).at(-1) ?? agencies.at(-1) ?? after;
  return claimed.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}
