import { type SQL, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { insertIfChanged } from "../db/insert-if-changed";
import { events, webhookEndpoints } from "../db/schema";
import { newId, nowIso } from "../lib/ids";
import { EVENT_TYPES, type EventData, type EventType } from "./events";

function row<T extends EventType>(agencyId: string, type: T, data: EventData<T>, id = newEventId()) {
  const spec = EVENT_TYPES[type];
  return {
    id,
    agencyId,
    eventType: type,
    apiVersion: spec.apiVersion,
    timestamp: Math.floor(Date.now() / 1000),
    data: spec.data.parse(data) as Record<string, unknown>,
    enqueuedAt: sentUnlessSubscribed(agencyId, type),
  };
}

/**
 * The event's `enqueued_at`: NULL (the drain sends it) while an active endpoint of the
 * agency subscribes to its type, otherwise the time of the write, so the drain never
 * claims an event only to find nobody to deliver it to. It is decided inside the insert,
 * so an endpoint registered before the change commits is always seen. An endpoint whose
 * stored list is not a list of names leaves the event to the drain, which records why.
 */
function sentUnlessSubscribed(agencyId: string, type: EventType): SQL {
  const list = sql`CASE WHEN json_valid(w.event_types) THEN w.event_types ELSE '[]' END`;
  return sql`(CASE WHEN EXISTS (
      SELECT 1 FROM ${webhookEndpoints} w
      WHERE w.agency_id = ${agencyId} AND w.is_active = 1 AND (
        w.event_types IS NULL OR NOT json_valid(w.event_types) OR json_type(w.event_types) <> 'array'
        OR EXISTS (SELECT 1 FROM json_each(${list}) WHERE type <> 'text' OR value = ${type})))
    THEN NULL ELSE ${nowIso()} END)`;
}

export const newEventId = () => newId("evt");

/**
 * The outbox row of an event, to be written in the same `db.batch` as the change it
 * describes. The data is parsed through the event's schema, so what is stored is what
 * the catalog documents.
 */
export function outboxInsert<T extends EventType>(db: Db, agencyId: string, type: T, data: EventData<T>) {
  return db.insert(events).values(row(agencyId, type, data));
}

/**
 * Like `outboxInsert`, but written only when the statement just before it in the batch
 * changed a row: a guarded UPDATE that lost a race emits no event. With `id` (from
 * `newEventId`), later statements of the batch can test whether the event was written.
 */
export function outboxInsertIfChanged<T extends EventType>(
  db: Db,
  agencyId: string,
  type: T,
  data: EventData<T>,
  id?: string,
) {
  const r = row(agencyId, type, data, id);
  return insertIfChanged(db, events, {
    ...r,
    data: JSON.stringify(r.data),
    attempts: 0,
    createdAt: new Date().toISOString(),
  });
}
