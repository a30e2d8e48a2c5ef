import { verify } from "@octokit/webhooks-methods";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, webhookDeliveries } from "../../src/db/schema";
import { EVENT_TYPES, type EventData, type EventType } from "../../src/domain/events/catalog";
import { newId } from "../../src/lib/ids";
import { EventSchema } from "../../src/schemas/event-log";
import { call, db, expectError, makeListing, makeTenant } from "../support/harness";
import {
  consume,
  drained,
  interceptWebhooks,
  type Receivers,
  registerEndpoint,
  WEBHOOK_QUEUE,
} from "../support/webhook-harness";

let receivers: Receivers;
beforeEach(() => {
  receivers = interceptWebhooks();
});
afterEach(() => vi.restoreAllMocks());

const DAY = 24 * 3600 * 1000;
const iso = (ms: number) => new Date(ms).toISOString();

/**
 * An event row written as the outbox would, at a chosen creation time. An insert records
 * no event earlier than the agency's latest, so a time in the agency's past is set after it.
 */
async function insertEvent<T extends EventType>(agencyId: string, type: T, data: EventData<T>, createdAt: string) {
  const id = newId("evt");
  const d = db();
  await d.batch([
    d.insert(events).values({
      id,
      agencyId,
      eventType: type,
      apiVersion: EVENT_TYPES[type].apiVersion,
      timestamp: Math.floor(Date.parse(createdAt) / 1000),
      data,
      enqueuedAt: createdAt,
      createdAt,
    }),
    d.update(events).set({ createdAt }).where(eq(events.id, id)),
  ]);
  return id;
}

const deactivated = (agencyId: string, createdAt: string, n = 0) =>
  insertEvent(agencyId, "user.deactivated", { user_id: `usr_${n}`, reason: "deactivated" }, createdAt);

/** Every item of a list, following next_cursor; fails on a repeated id. */
async function all(path: string, key: string) {
  const items: any[] = [];
  let cursor = "";
  for (let page = 0; page < 20; page++) {
    const sep = path.includes("?") ? "&" : "?";
    const r = await call(`${path}${cursor ? `${sep}cursor=${encodeURIComponent(cursor)}` : ""}`, { key });
    expect(r.status, r.text).toBe(200);
    items.push(...r.json.data);
    cursor = r.json.next_cursor;
    if (!cursor) break;
  }
  expect(new Set(items.map((i) => i.event_id)).size, "no event twice").toBe(items.length);
  return items;
}

describe("the events API", () => {
  it("shows an event exactly as its webhook delivery carried it, minus the per-attempt fields", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/events", ["listing.created"]);
    const listing = await makeListing(t);
    await drained();
    const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id }]);
    const [req] = receivers.received;
    expect(await verify(hook.signing_secret, req!.body, req!.headers.get("X-Webhook-Signature")!)).toBe(true);
    const delivered = JSON.parse(req!.body);

    const one = await call(`/api/v1/events/${delivered.event_id}`, { key: t.key });
    expect(one.status, one.text).toBe(200);
    const { timestamp, nonce, ...perEvent } = delivered;
    expect(one.json, one.text).toEqual({ ...perEvent, created_at: expect.any(String) });
    expect(JSON.stringify(one.json.data), "data is the same JSON, key for key").toBe(JSON.stringify(delivered.data));
    expect(one.json.data.listing_number).toBe(listing.listing_number);
    expect(Math.abs(Date.parse(one.json.created_at) / 1000 - timestamp)).toBeLessThan(60);
    expect(nonce).toBeTypeOf("string");
    expect(EventSchema.safeParse(one.json).success, "the documented schema describes it").toBe(true);
    expect(one.headers.get("X-Rate-Limit-Limit")).toBe("600");

    const list = await call("/api/v1/events?type=listing.created", { key: t.key });
    expect(list.status, list.text).toBe(200);
    expect(list.json).toEqual({ data: [one.json], next_cursor: "", last_sequence: one.json.sequence });
    expect(list.headers.get("X-Rate-Limit-Limit")).toBe("300");
  });

  it("lists the agency's events oldest first, by type and inside a half-open time window", async () => {
    const t = await makeTenant();
    const base = Date.now() - 5 * DAY;
    const a = await deactivated(t.agencyId, iso(base), 1);
    const b = await insertEvent(
      t.agencyId,
      "listing.status_changed",
      { listing_number: "abc1234", status: "Sold", previous_status: "Active" },
      iso(base + 1000),
    );
    const c = await deactivated(t.agencyId, iso(base + 2000), 2);
    const d = await deactivated(t.agencyId, iso(base + 3000), 3);
    const mine = (items: any[]) => items.map((i) => i.event_id).filter((id) => [a, b, c, d].includes(id));

    expect(mine(await all("/api/v1/events", t.key))).toEqual([a, b, c, d]);
    expect(mine(await all("/api/v1/events?type=user.deactivated", t.key))).toEqual([a, c, d]);
    const typed = await call("/api/v1/events?type=listing.status_changed", { key: t.key });
    expect(
      typed.json.data.map((e: any) => e.event_type),
      typed.text,
    ).toEqual(["listing.status_changed"]);
    // created_after is inclusive, created_before exclusive: windows tile without gap or overlap.
    const window = `created_after=${iso(base + 1000)}&created_before=${iso(base + 3000)}`;
    expect(mine(await all(`/api/v1/events?${window}`, t.key))).toEqual([b, c]);
    expect(mine(await all(`/api/v1/events?created_after=${iso(base + 3000)}`, t.key))).toEqual([d]);
    expect(mine(await all(`/api/v1/events?created_before=${iso(base + 1000)}`, t.key))).toEqual([a]);
    // Any offset names the same instant.
    const offset = new Date(base + 2000 + 2 * 3600_000).toISOString().replace("Z", "+02:00");
    expect(mine(await all(`/api/v1/events?created_after=${encodeURIComponent(offset)}`, t.key))).toEqual([c, d]);
  });

  it("refuses an unknown type, a malformed instant and an empty or reversed window", async () => {
    const t = await makeTenant();
    const unknown = await call("/api/v1/events?type=listing.activated", { key: t.key });
    expectError(unknown, 422, "request_query_invalid");
    expect(unknown.json.error.details.errors[0], unknown.text).toMatchObject({
      field: "type",
      code: "validation_enum_not_allowed",
    });
    for (const bad of ["yesterday", "2026-11-22", "2026-11-22T10:00:00", "2026-02-31T00:00:00Z"]) {
      const r = await call(`/api/v1/events?created_after=${encodeURIComponent(bad)}`, { key: t.key });
      expectError(r, 422, "request_query_invalid");
      expect(r.json.error.details.errors[0].field, r.text).toBe("created_after");
    }
    for (const before of ["2026-11-22T10:00:00Z", "2026-11-22T09:00:00Z", "2026-11-22T12:00:00+02:00"]) {
      const r = await call(
        `/api/v1/events?created_after=2026-11-22T10:00:00Z&created_before=${encodeURIComponent(before)}`,
        {
          key: t.key,
        },
      );
      expectError(r, 422, "request_query_invalid");
      expect(r.json.error.details.errors[0], r.text).toMatchObject({
        field: "created_before",
        code: "validation_out_of_range",
      });
    }
    expectError(await call("/api/v1/events?kind=listing.created", { key: t.key }), 422, "request_query_invalid");
  });

  it("answers each rule that ties the query's fields together with its own code, context and message", async () => {
    const t = await makeTenant();
    const cases = [
      {
        query: "after_sequence=0&created_after=2026-11-01T00:00:00Z",
        field: "created_after",
        code: "validation_unknown_field",
        message: "Not allowed together with after_sequence.",
        ctx: { conflicts_with: "after_sequence" },
      },
      {
        query: "created_before=2026-02-31T00:00:00Z",
        field: "created_before",
        code: "validation_string_pattern",
        message:
          "Expected an ISO 8601 date-time with an offset, like 2026-03-09T09:00:00Z or 2026-03-09T09:00:00-07:00.",
        ctx: {
          format: "datetime",
          expected: "an ISO 8601 date-time with an offset",
          example: "2026-03-09T09:00:00Z or 2026-03-09T09:00:00-07:00",
        },
      },
      {
        query: "created_after=2026-11-22T12:00:00%2B02:00&created_before=2026-11-22T09:30:00Z",
        field: "created_before",
        code: "validation_out_of_range",
        message: "Must be later than created_after.",
        ctx: { minimum: "2026-11-22T10:00:00.000Z", inclusive: false },
      },
    ];
    for (const { query, field, code, message, ctx } of cases) {
      const r = await call(`/api/v1/events?${query}`, { key: t.key });
      expectError(r, 422, "request_query_invalid");
      expect(r.json.error.message, r.text).toBe(`Invalid query parameter. ${field}: ${message}`);
      expect(r.json.error.details, r.text).toEqual({
        errors: [{ field, code, message, ctx }],
        fields: { [field]: [message] },
      });
    }
  });

  it("pages by cursor; a cursor works only for the filters it was minted for", async () => {
    const t = await makeTenant();
    const base = Date.now() - DAY;
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await deactivated(t.agencyId, iso(base + i * 1000), i));
    // The tenant's own user.signed_up events are newer: the window holds only these five.
    const after = `created_after=${iso(base)}&created_before=${iso(base + 5000)}`;
    const p1 = await call(`/api/v1/events?${after}&limit=2`, { key: t.key });
    expect(
      p1.json.data.map((e: any) => e.event_id),
      p1.text,
    ).toEqual(ids.slice(0, 2));
    expect(p1.json.next_cursor).not.toBe("");
    const p2 = await call(`/api/v1/events?${after}&limit=2&cursor=${p1.json.next_cursor}`, { key: t.key });
    expect(
      p2.json.data.map((e: any) => e.event_id),
      p2.text,
    ).toEqual(ids.slice(2, 4));
    const p3 = await call(`/api/v1/events?${after}&limit=2&cursor=${p2.json.next_cursor}`, { key: t.key });
    expect(
      p3.json.data.map((e: any) => e.event_id),
      p3.text,
    ).toEqual(ids.slice(4));
    expect(p3.json.next_cursor).toBe("");
    const foreign = await call(`/api/v1/events?type=user.deactivated&cursor=${p1.json.next_cursor}`, { key: t.key });
    expectError(foreign, 422, "request_query_invalid");
  });

  it("keeps 30 days: an older event is neither listed nor found, before any sweep", async () => {
    const t = await makeTenant();
    const old = await deactivated(t.agencyId, iso(Date.now() - 31 * DAY), 1);
    const kept = await deactivated(t.agencyId, iso(Date.now() - 29 * DAY), 2);
    const since = `created_after=${iso(Date.now() - 365 * DAY)}`;
    const items = await all(`/api/v1/events?type=user.deactivated&${since}`, t.key);
    expect(items.map((e) => e.event_id)).toEqual([kept]);
    expectError(await call(`/api/v1/events/${old}`, { key: t.key }), 404, "event_not_found");
    expect((await call(`/api/v1/events/${kept}`, { key: t.key })).status).toBe(200);
  });

  it("shows only the caller's agency: another agency's event is event_not_found", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const ofA = await deactivated(a.agencyId, iso(Date.now() - 1000));
    const ofB = await deactivated(b.agencyId, iso(Date.now() - 1000));
    expectError(await call(`/api/v1/events/${ofA}`, { key: b.key }), 404, "event_not_found");
    expectError(await call("/api/v1/events/evt_unknown", { key: b.key }), 404, "event_not_found");
    const listed = (await all("/api/v1/events", b.key)).map((e) => e.event_id);
    expect(listed).toContain(ofB);
    expect(listed).not.toContain(ofA);
  });

  it("needs webhooks:read", async () => {
    const denied = await makeTenant({ scopes: ["listings:read", "webhooks:write"] });
    const id = await deactivated(denied.agencyId, iso(Date.now() - 1000));
    expectError(await call("/api/v1/events", { key: denied.key }), 403, "auth.scope_denied");
    expectError(await call(`/api/v1/events/${id}`, { key: denied.key }), 403, "auth.scope_denied");
    const reader = await makeTenant({ scopes: ["webhooks:read", "users:read"] });
    const own = await deactivated(reader.agencyId, iso(Date.now() - 1000));
    const r = await call(`/api/v1/events/${own}`, { key: reader.key });
    expect(r.status, r.text).toBe(200);
    expectError(await call("/api/v1/events"), 401, "api_key_missing");
  });
});
