import { getTableColumns, sql } from "drizzle-orm";
import type { Db } from "../db/client";
import { events } from "../db/schema";
import { newId } from "../lib/ids";
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
  };
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
  // INSERT … SELECT lists every column of the table, in table order.
  const values = getTableColumns(events);
  const byColumn: Record<string, unknown> = {
    ...r,
    data: JSON.stringify(r.data),
    enqueuedAt: null,
    attempts: 0,
    createdAt: new Date().toISOString(),
  };
  const selected = sql.join(
    Object.keys(values).map((name) => sql`${byColumn[name] ?? null}`),
    sql`, `,
  );
  return db.insert(events).select(sql`SELECT ${selected} WHERE changes() > 0`);
}
