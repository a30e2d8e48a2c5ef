import { getTableColumns, type SQL, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { insertIfChanged } from "../../db/insert-if-changed";
import { events, listingOrders, listings, users, webhookEndpoints } from "../../db/schema";
import { newId, nowIso } from "../../lib/ids";
import { currentTrace, formatTraceparent } from "../../lib/telemetry/trace";
import { EVENT_TYPES, type EventData, type EventType } from "./catalog";

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
    traceParent: writerTrace(),
    ...resourceOf(agencyId, type, data),
  };
}

/** The readable resources events describe, as a reader fetches them again. */
export type ResourceType = "listing" | "user" | "order";

/**
 * The resource an event describes and its version once the change is written, read in
 * the statement that inserts the event (which follows the change in its batch), so the
 * event names exactly the version the change produced. Events about no resource a client
 * reads (appointments, deliveries, subscriptions) name none.
 */
function resourceOf<T extends EventType>(agencyId: string, type: T, data: EventData<T>) {
  const d = data as Record<string, unknown>;
  if (type.startsWith("listing.")) {
    const number = String(d.listing_number);
    return {
      resourceType: "listing",
      resourceId: number,
      resourceVersion: sql`(SELECT ${listings.version} FROM ${listings}
        WHERE ${listings.agencyId} = ${agencyId} AND ${listings.listingNumber} = ${number})`,
    };
  }
  if (type.startsWith("user.")) {
    const id = String(d.user_id);
    return {
      resourceType: "user",
      resourceId: id,
      resourceVersion: sql`(SELECT ${users.version} FROM ${users}
        WHERE ${users.id} = ${id} AND ${users.agencyId} = ${agencyId})`,
    };
  }
  if (type === "invoice.payment_made" && d.listing_number !== null) {
    // The invoice's order row, written earlier in the same batch; none when it names no listing of ours.
    const order = (
      column: typeof listingOrders.id | typeof listingOrders.version,
    ) => sql`(SELECT ${column} FROM ${listingOrders}
      WHERE ${listingOrders.agencyId} = ${agencyId} AND ${listingOrders.kind} = 'invoice'
        AND ${listingOrders.providerReference} = ${String(d.provider_reference)})`;
    return {
      resourceType: sql`CASE WHEN ${order(listingOrders.id)} IS NULL THEN NULL ELSE 'order' END`,
      resourceId: order(listingOrders.id),
      resourceVersion: order(listingOrders.version),
    };
  }
  return {};
}

/** The trace of the request (or run) writing the event, so the drain can hand it on to its deliveries. */
function writerTrace(): string | null {
  const trace = currentTrace();
  return trace ? formatTraceparent(trace) : null;
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

/**
 * One event per row a query selects, to be written in the same `db.batch` as a change to
 * many rows at once, where a statement per row would not scale: the statement binds the
 * same few parameters however many rows it writes. `ctes` (a WITH list, without `WITH`)
 * and `from` (`FROM … WHERE …`) select the rows; `data` builds each one's payload as a
 * JSON object in SQL, in the shape the type's schema documents (it cannot be parsed
 * through it here: the callers' tests parse what they write). `resource` names each row's
 * resource and the version the change gives it.
 */
export function outboxInsertPerRow<T extends EventType>(
  db: Db,
  agencyId: string,
  type: T,
  rows: { ctes: SQL; data: SQL; from: SQL; resource?: { type: ResourceType; id: SQL; version: SQL } },
) {
  // Each row's id: the time part of this moment's ids, so they still sort by creation, and 12 random characters.
  const timePart = newEventId().slice(0, -12);
  const values: Partial<Record<keyof typeof events.$inferInsert, SQL | string | number>> = {
    id: sql`${timePart} || lower(hex(randomblob(6)))`,
    agencyId,
    eventType: type,
    apiVersion: EVENT_TYPES[type].apiVersion,
    timestamp: Math.floor(Date.now() / 1000),
    data: rows.data,
    enqueuedAt: sentUnlessSubscribed(agencyId, type),
    createdAt: nowIso(),
    attempts: 0,
    traceParent: writerTrace() ?? undefined,
    ...(rows.resource && {
      resourceType: rows.resource.type,
      resourceId: rows.resource.id,
      resourceVersion: rows.resource.version,
    }),
  };
  // INSERT … SELECT lists every column of the table, in table order.
  const selected = sql.join(
    Object.keys(getTableColumns(events)).map((name) => sql`${values[name as keyof typeof values] ?? null}`),
    sql`, `,
  );
  return db.insert(events).select(sql`WITH ${rows.ctes} SELECT ${selected} ${rows.from}`);
}
