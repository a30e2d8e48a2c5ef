import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { type EndpointFilter, selects } from "../../domain/events/filters";
import { newId } from "../../lib/ids";
import { childOf, formatTraceparent, parseTraceparent } from "../../lib/telemetry/trace";
import type { ClaimedEvent } from "./claim";

/** Queues accept at most 100 messages per sendBatch. */
const MESSAGES_PER_SEND = 100;

/** The ids as one JSON array: a single bound parameter however many there are. */
export const jsonIds = (ids: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;

interface Subscriber {
  id: string;
  agencyId: string;
  /** null: every type; an Error: the stored list does not parse. */
  eventTypes: string[] | null | Error;
  /** The endpoint's filters (null: none); an Error: the stored list does not parse. */
  filters: EndpointFilter[] | null | Error;
}

/** A stored JSON list, parsed and checked; an Error (naming the endpoint) when it is not one. */
function storedList<T>(endpointId: string, column: string, text: string | null, ok: (v: unknown) => boolean) {
  try {
    const parsed: unknown = text === null ? null : JSON.parse(text);
    if (parsed !== null && !(Array.isArray(parsed) && parsed.every(ok))) throw new Error("not a list");
    return parsed as T[] | null;
  } catch (e) {
    return new Error(`endpoint ${endpointId}: ${column} ${e instanceof Error ? e.message : String(e)}`);
  }
}

/** The active endpoints of these agencies, each with the event types it takes. */
export async function subscribersOf(db: Db, agencyIds: string[]): Promise<Subscriber[]> {
  // Lists are read as text and parsed per endpoint, so one bad row fails only its own agency's events.
  const rows = await db.all<{ id: string; agency_id: string; event_types: string | null; filters: string | null }>(sql`
    SELECT id, agency_id, event_types, filters FROM webhook_endpoints
    WHERE agency_id IN ${jsonIds(agencyIds)} AND is_active = 1`);
  return rows.map((r) => ({
    id: r.id,
    agencyId: r.agency_id,
    eventTypes: storedList<string>(r.id, "event_types", r.event_types, (t) => typeof t === "string"),
    filters: storedList<EndpointFilter>(
      r.id,
      "filters",
      r.filters,
      (f) => typeof f === "object" && f !== null && typeof (f as EndpointFilter).path === "string",
    ),
  }));
}

export type DeliveryRow = [
  id: string,
  eventId: string,
  endpointId: string,
  agencyId: string,
  status: "pending" | "filtered",
];

/**
 * The delivery rows of one event: one per active endpoint of its agency subscribed to
 * its type, `pending`, or `filtered` where the endpoint's filters do not select it (so
 * the log tells it from a lost one). Throws when the event cannot be delivered as stored
 * (its data does not parse, a subscriber's list does not): that event's failure, not the page's.
 */
export function deliveriesOf(event: ClaimedEvent, subscribers: Subscriber[]): DeliveryRow[] {
  let data: unknown;
  try {
    data = JSON.parse(event.data);
  } catch (e) {
    throw new Error(`event data is not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
  }
  const rows: DeliveryRow[] = [];
  for (const s of subscribers) {
    if (s.agencyId !== event.agency_id) continue;
    if (s.eventTypes instanceof Error) throw s.eventTypes;
    if (s.filters instanceof Error) throw s.filters;
    if (s.eventTypes === null || s.eventTypes.includes(event.event_type))
      rows.push([newId("whd"), event.id, s.id, event.agency_id, selects(s.filters, data) ? "pending" : "filtered"]);
  }
  return rows;
}

/**
 * Messages in round-robin order across agencies: each agency's first delivery, then
 * each one's second, and so on, so the queue holds no agency's burst in front of
 * another agency's delivery.
 */
function interleave(
  deliveries: { id: string; agency_id: string; event_id: string; endpoint_id: string }[],
  order: Map<string, number>,
) {
  const turn = new Map<string, number>();
  const agencyRank = new Map<string, number>();
  const ranked = deliveries
    .sort(
      (a, b) =>
        (order.get(a.event_id) ?? 0) - (order.get(b.event_id) ?? 0) || a.endpoint_id.localeCompare(b.endpoint_id),
    )
    .map((d) => {
      const t = turn.get(d.agency_id) ?? 0;
      turn.set(d.agency_id, t + 1);
      if (!agencyRank.has(d.agency_id)) agencyRank.set(d.agency_id, agencyRank.size);
      return { id: d.id, eventId: d.event_id, turn: t, agency: agencyRank.get(d.agency_id)! };
    });
  return ranked.sort((a, b) => a.turn - b.turn || a.agency - b.agency);
}

/**
 * Inserts the rows (unique per event and endpoint) and sends one message per pending
 * delivery of the events, each carrying a child span of its event's trace.
 */
export async function fanOut(db: Db, env: Env, events: ClaimedEvent[], rows: DeliveryRow[]): Promise<number> {
  if (!events.length) return 0;
  if (rows.length) {
    // One statement whatever the page holds: the rows travel as one JSON parameter.
    await db.run(sql`
      INSERT INTO webhook_deliveries (id, event_id, endpoint_id, agency_id, status)
      SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]'), json_extract(value, '$[2]'),
        json_extract(value, '$[3]'), json_extract(value, '$[4]')
      FROM json_each(${JSON.stringify(rows)}) WHERE true
      ON CONFLICT DO NOTHING`);
  }
  // Rows left by an earlier drain whose send failed are pending too, and go out now.
  const pending = await db.all<{ id: string; agency_id: string; event_id: string; endpoint_id: string }>(sql`
    SELECT id, agency_id, event_id, endpoint_id FROM webhook_deliveries
    WHERE event_id IN ${jsonIds(events.map((e) => e.id))} AND status = 'pending' AND replay_id IS NULL`);
  const ordered = interleave(pending, new Map(events.map((e, i) => [e.id, i])));
  const traces = new Map(events.map((e) => [e.id, parseTraceparent(e.trace_parent)]));
  const messages = ordered.map(({ id, eventId }) => {
    const trace = traces.get(eventId);
    return { body: trace ? { delivery_id: id, traceparent: formatTraceparent(childOf(trace)) } : { delivery_id: id } };
  });
  for (let i = 0; i < messages.length; i += MESSAGES_PER_SEND) {
    await env.WEBHOOK_QUEUE.sendBatch(messages.slice(i, i + MESSAGES_PER_SEND));
  }
  return messages.length;
}
