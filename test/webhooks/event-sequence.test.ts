import { env } from "cloudflare:workers";
import { and, eq, lte } from "drizzle-orm";
import Stripe from "stripe";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { eventSequences, events, listings, users, webhookDeliveries } from "../../src/db/schema";
import { readableEventTypes } from "../../src/domain/events/access";
import { EVENT_TYPE_NAMES, type EventType } from "../../src/domain/events/catalog";
import { feedRows } from "../../src/domain/events/feed";
import { outboxInsert } from "../../src/domain/events/outbox";
import { newId } from "../../src/lib/ids";
import { EventPageSchema } from "../../src/schemas/event-log";
import { sweepRetention } from "../../src/webhooks/retention";
import { call, db, expectError, internal, makeListing, makeTenant, type Tenant, unique } from "../support/harness";
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

/** The agency's stored events in sequence order. */
const stored = (agencyId: string) =>
  db().select().from(events).where(eq(events.agencyId, agencyId)).orderBy(events.sequence);

const lastOf = async (agencyId: string) =>
  (await db().select().from(eventSequences).where(eq(eventSequences.agencyId, agencyId)).get())?.last ?? 0;

/** `n` events of the agency written in one batch, alternating a user type and a listing type. */
async function writeEvents(agencyId: string, n: number) {
  const d = db();
  const statements = Array.from({ length: n }, (_, i) =>
    i % 2 === 0
      ? outboxInsert(d, agencyId, "user.deactivated", { user_id: `usr_${i}`, reason: "deactivated" })
      : outboxInsert(d, agencyId, "listing.status_changed", {
          listing_number: "abc1234",
          status: "Sold",
          previous_status: "Active",
        }),
  );
  for (let i = 0; i < statements.length; i += 20) {
    const chunk = statements.slice(i, i + 20);
    await d.batch(chunk as [(typeof chunk)[0], ...typeof chunk]);
  }
}

/** Every item of the feed after `after`, following next_cursor; also the last page's last_sequence. */
async function feed(key: string, after: number, extra = "") {
  const items: any[] = [];
  let cursor = "";
  let last = -1;
  for (let page = 0; page < 50; page++) {
    const r = await call(
      `/api/v1/events?after_sequence=${after}&limit=7${extra}${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`,
      { key },
    );
    expect(r.status, r.text).toBe(200);
    expect(EventPageSchema.safeParse(r.json).success, r.text).toBe(true);
    items.push(...r.json.data);
    last = r.json.last_sequence;
    cursor = r.json.next_cursor;
    if (!cursor) break;
  }
  return { items, sequences: items.map((i) => i.sequence), last };
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);

describe("the per-agency event sequence", () => {
  it("numbers events and webhook deliveries alike, naming the version each change produced", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/sequence", ["listing.created"]);
    const before = await lastOf(t.agencyId);
    const listing = await makeListing(t, { activate: true });
    const changed = await call(`/api/v1/listings/${listing.listing_number}/status`, {
      key: t.key,
      method: "PATCH",
      body: { new_status: "Active" },
    });
    expect(changed.status, changed.text).toBe(200);
    const row = await db().select().from(listings).where(eq(listings.listingNumber, listing.listing_number)).get();

    const { items } = await feed(t.key, before);
    const created = items.find((e) => e.event_type === "listing.created");
    const status = items.find((e) => e.event_type === "listing.status_changed");
    expect(created.sequence, JSON.stringify(items)).toBe(before + 1);
    expect(created.resource).toEqual({ type: "listing", id: listing.listing_number, version: 1 });
    expect(status.sequence).toBeGreaterThan(created.sequence);
    // Activation raised the version once more; the status change names the version it wrote.
    expect(status.resource).toEqual({ type: "listing", id: listing.listing_number, version: row!.version });
    expect(row!.version).toBe(3);

    await drained();
    const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id }]);
    const body = JSON.parse(receivers.received[0]!.body);
    expect(body.event_id).toBe(created.event_id);
    expect(body.sequence).toBe(created.sequence);
    expect(body.resource).toEqual(created.resource);
  });

  it("names the user and its version on user events", async () => {
    const t = await makeTenant();
    const before = await lastOf(t.agencyId);
    const r = await internal(`/internal/v1/users/${t.viewer.id}/deactivate`, { method: "POST", body: {} });
    expect(r.status, r.text).toBe(200);
    const user = await db().select().from(users).where(eq(users.id, t.viewer.id)).get();
    expect(user!.version).toBeGreaterThan(1);
    const { items } = await feed(t.key, before, "&type=user.deactivated");
    expect(
      items.map((e) => [e.sequence, e.resource]),
      JSON.stringify(items),
    ).toEqual([[before + 1, { type: "user", id: t.viewer.id, version: user!.version }]]);
  });

  it("names the invoice's order on invoice.payment_made", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const invoice = `in_${unique("inv").replaceAll("-", "")}`;
    const payload = JSON.stringify({
      id: `evt_${unique("stripe")}`,
      type: "invoice.paid",
      data: {
        object: {
          id: invoice,
          amount_paid: 24900,
          currency: "usd",
          created: 1_790_000_000,
          status_transitions: { paid_at: 1_790_000_100 },
          metadata: { agency_id: t.agencyId, listing_number: listing.listing_number },
        },
      },
    });
    const header = await new Stripe("sk_test_unused").webhooks.generateTestHeaderStringAsync({
      payload,
      secret: "whsec_stripe_test_secret",
    });
    const hook = await call("/hooks/stripe", {
      method: "POST",
      rawBody: payload,
      headers: { "Content-Type": "application/json", "Stripe-Signature": header },
      idempotencyKey: null,
    });
    expect(hook.status, hook.text).toBe(200);
    const orders = await call(`/api/v1/listings/${listing.listing_number}/orders`, { key: t.key });
    const order = orders.json.data.find((o: any) => o.type === "invoice");
    const { items } = await feed(t.key, 0, "&type=invoice.payment_made");
    expect(items.map((e) => e.resource)).toEqual([{ type: "order", id: order.id, version: 1 }]);
  });

  it("names each handed-over listing's version after a user leaves the agency", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const listing = await makeListing(a);
    const before = await lastOf(a.agencyId);
    const moved = await internal(`/internal/v1/users/${a.agent.id}/manager`, {
      method: "PATCH",
      body: { manager_id: b.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    const row = await db().select().from(listings).where(eq(listings.listingNumber, listing.listing_number)).get();
    expect(row!.version).toBe(2);
    const { items } = await feed(a.key, before, "&type=listing.updated");
    expect(
      items.map((e) => [e.sequence, e.resource]),
      JSON.stringify(items),
    ).toEqual([[before + 1, { type: "listing", id: listing.listing_number, version: 2 }]]);
  });

  it("takes no number for a batch that fails after writing its event", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const last = await lastOf(t.agencyId);
    const d = db();
    const row = await d.select().from(listings).where(eq(listings.listingNumber, listing.listing_number)).get();
    await expect(
      d.batch([
        outboxInsert(d, t.agencyId, "listing.status_changed", {
          listing_number: listing.listing_number,
          status: "Sold",
          previous_status: "Coming Soon",
        }),
        // The same listing again: the unique listing number refuses it, and the whole batch rolls back.
        d.insert(listings).values({ ...row!, id: `lst_${unique("dup")}` }),
      ]),
    ).rejects.toThrow();
    expect(await lastOf(t.agencyId)).toBe(last);
    expect((await stored(t.agencyId)).map((e) => e.sequence)).toEqual(range(1, last));
    await writeEvents(t.agencyId, 1);
    expect((await stored(t.agencyId)).map((e) => e.sequence)).toEqual(range(1, last + 1));
  });

  it("gives concurrent writes of one agency consecutive numbers, and another agency its own", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const active = await Promise.all([0, 1, 2, 3, 4].map(() => makeListing(a, { activate: true })));
    const before = await lastOf(a.agencyId);
    const creates = (t: Tenant, n: number) =>
      Array.from({ length: n }, () =>
        call("/api/v1/listings", {
          key: t.key,
          body: { address: `${unique("addr")} Quay`, owner_user_id: t.owner.id, agent_one_id: t.agent.id },
        }),
      );
    const statuses = active.map((l) =>
      call(`/api/v1/listings/${l.listing_number}/status`, {
        key: a.key,
        method: "PATCH",
        body: { new_status: "Sold" },
      }),
    );
    const answers = await Promise.all([...creates(a, 30), ...statuses, ...creates(b, 10)]);
    for (const r of answers) expect(r.status, r.text).toBeLessThan(300);

    const mine = (await stored(a.agencyId)).filter((e) => (e.sequence ?? 0) > before);
    expect(mine).toHaveLength(35);
    expect(mine.map((e) => e.sequence)).toEqual(range(before + 1, before + 35));
    expect(await lastOf(a.agencyId)).toBe(before + 35);
    const { sequences, last } = await feed(a.key, before);
    expect(sequences).toEqual(range(before + 1, before + 35));
    expect(last).toBe(before + 35);
    // B's own events (its users' sign-ups, then its listings) from 1, untouched by A's burst.
    const theirs = await feed(b.key, 0);
    expect(theirs.sequences).toEqual(range(1, theirs.last));
    expect(theirs.items.filter((e) => e.event_type === "listing.created")).toHaveLength(10);
    expect(theirs.items.slice(-10).every((e) => e.event_type === "listing.created")).toBe(true);
  });
});

describe("GET /api/v1/events?after_sequence=N", () => {
  /** A tenant and the sequence its setup (its users' sign-ups) reached. */
  async function tenant(opts: Parameters<typeof makeTenant>[0] = {}) {
    const t = await makeTenant(opts);
    return { t, s0: await lastOf(t.agencyId) };
  }

  it("pages in sequence order from N + 1 and ends at last_sequence", async () => {
    const { t, s0 } = await tenant();
    await writeEvents(t.agencyId, 45);
    const all = await feed(t.key, 0);
    expect(all.sequences).toEqual(range(1, s0 + 45));
    expect(all.last).toBe(s0 + 45);
    expect(all.items.map((e) => e.event_id)).toEqual((await stored(t.agencyId)).map((e) => e.id));
    // A receiver that saw 41 after 39 asks for what follows 39.
    const gap = await call(`/api/v1/events?after_sequence=${s0 + 39}&limit=2`, { key: t.key });
    expect(
      gap.json.data.map((e: any) => e.sequence),
      gap.text,
    ).toEqual([s0 + 40, s0 + 41]);
    expect(gap.json.last_sequence).toBe(s0 + 45);
    const rest = await call(`/api/v1/events?after_sequence=${s0 + 39}&limit=2&cursor=${gap.json.next_cursor}`, {
      key: t.key,
    });
    expect(
      rest.json.data.map((e: any) => e.sequence),
      rest.text,
    ).toEqual([s0 + 42, s0 + 43]);
    expect((await feed(t.key, s0 + 10)).sequences).toEqual(range(s0 + 11, s0 + 45));
    // At or past the end: an empty page that still says where the end is.
    for (const after of [s0 + 45, 100_000]) {
      const end = await call(`/api/v1/events?after_sequence=${after}`, { key: t.key });
      expect(end.json, end.text).toEqual({ data: [], next_cursor: "", last_sequence: s0 + 45 });
    }
    const plain = await call("/api/v1/events?limit=1", { key: t.key });
    expect(plain.json.last_sequence, plain.text).toBe(s0 + 45);
  });

  it("shows only the types the key may read, and of one type when asked, the gaps covered by last_sequence", async () => {
    const { t, s0 } = await tenant();
    const narrow = await tenant({ scopes: ["webhooks:read", "listings:read"] });
    await writeEvents(t.agencyId, 12);
    await writeEvents(narrow.t.agencyId, 12);
    const listingsOnly = await feed(narrow.t.key, 0);
    expect(listingsOnly.sequences).toEqual([2, 4, 6, 8, 10, 12].map((n) => narrow.s0 + n));
    expect(listingsOnly.items.every((e) => e.event_type === "listing.status_changed")).toBe(true);
    expect(listingsOnly.last).toBe(narrow.s0 + 12);
    const typed = await feed(t.key, s0 + 3, "&type=user.deactivated");
    expect(typed.sequences).toEqual([5, 7, 9, 11].map((n) => s0 + n));
    expect(typed.last).toBe(s0 + 12);
    expectError(
      await call("/api/v1/events?after_sequence=0&type=user.deactivated", { key: narrow.t.key }),
      403,
      "auth.scope_denied",
    );
  });

  it("is 410 event_sequence_expired once the event after N is past the 30-day window", async () => {
    const { t, s0 } = await tenant();
    await writeEvents(t.agencyId, 10);
    const old = new Date(Date.now() - 31 * DAY).toISOString();
    const upTo = (n: number) => and(eq(events.agencyId, t.agencyId), lte(events.sequence, n));
    await db()
      .update(events)
      .set({ createdAt: old })
      .where(upTo(s0 + 4));
    const gone = await call("/api/v1/events?after_sequence=0", { key: t.key });
    expectError(gone, 410, "event_sequence_expired");
    expect(gone.json.error.details).toEqual({ after_sequence: 0, oldest_sequence: s0 + 5, last_sequence: s0 + 10 });
    expect(gone.json.error.message).toContain("resync");
    expectError(await call(`/api/v1/events?after_sequence=${s0 + 3}`, { key: t.key }), 410, "event_sequence_expired");
    expect((await feed(t.key, s0 + 4)).sequences).toEqual(range(s0 + 5, s0 + 10));

    // Swept, or every kept event gone: still 410 while N is below the last number, an empty page from it on.
    await db()
      .delete(events)
      .where(upTo(s0 + 4));
    await db().update(events).set({ createdAt: old }).where(eq(events.agencyId, t.agencyId));
    const none = await call(`/api/v1/events?after_sequence=${s0 + 9}`, { key: t.key });
    expectError(none, 410, "event_sequence_expired");
    expect(none.json.error.details).toEqual({
      after_sequence: s0 + 9,
      oldest_sequence: s0 + 11,
      last_sequence: s0 + 10,
    });
    const end = await call(`/api/v1/events?after_sequence=${s0 + 10}`, { key: t.key });
    expect(end.json, end.text).toEqual({ data: [], next_cursor: "", last_sequence: s0 + 10 });
  });

  it("never loses an event to the sweep while keeping one before it, whatever the writers' clocks", async () => {
    const { t, s0 } = await tenant();
    // Three writers whose clocks disagree by milliseconds, around the 30-day horizon: the
    // second event is recorded as written before the first.
    const horizon = Date.now() - 30 * DAY;
    const at = (ms: number) => new Date(horizon + ms).toISOString();
    const d = db();
    for (const ms of [20_000, 19_990, 21_000]) {
      // Each writer records its event at its own clock's time; the drain has sent it.
      await d.insert(events).values({
        id: newId("evt"),
        agencyId: t.agencyId,
        eventType: "user.deactivated",
        apiVersion: "2026-11-01",
        timestamp: Math.floor((horizon + ms) / 1000),
        data: { user_id: "usr_clock", reason: "deactivated" },
        createdAt: at(ms),
        enqueuedAt: at(ms),
      });
    }
    // Recorded in sequence order, each no older than its predecessor.
    const rows = (await stored(t.agencyId)).filter((r) => r.sequence! > s0);
    expect(rows.map((r) => r.sequence)).toEqual(range(s0 + 1, s0 + 3));
    const times = rows.map((r) => r.createdAt);
    expect(times).toEqual([...times].sort());
    // The sweep at a horizon between the writers' clocks keeps both first events.
    await sweepRetention(env, horizon + 30 * DAY + 19_995);
    const kept = (await stored(t.agencyId)).filter((r) => r.sequence! > s0);
    expect(kept.map((r) => r.sequence)).toEqual(range(s0 + 1, s0 + 3));
    expect((await feed(t.key, s0)).sequences).toEqual(range(s0 + 1, s0 + 3));
  });

  it("reads a page of one type, or of the types a key may read, from those types' index entries", async () => {
    const planOf = async (readable: readonly EventType[], type?: EventType) => {
      const { sql: text, params } = feedRows(db(), "agy_x", { readable, type }, 0, 99, 8).toSQL();
      const plan = await env.DB.prepare(`EXPLAIN QUERY PLAN ${text}`)
        .bind(...params)
        .all<{ detail: string }>();
      return plan.results.map((r) => r.detail).join("; ");
    };
    const byType =
      "USING INDEX events_agency_type_sequence (agency_id=? AND event_type=? AND sequence>? AND sequence<?)";
    for (const [readable, type] of [
      [["user.deactivated"], "user.deactivated"],
      [EVENT_TYPE_NAMES, "user.deactivated"],
      [["user.deactivated"], undefined],
      [["user.deactivated", "listing.status_changed"], undefined],
    ] as const) {
      const plan = await planOf(readable, type);
      expect(plan).toContain(byType);
      // The page's own rows (at most its limit) are then read by id and put in order.
      expect(plan).toContain("USING INDEX sqlite_autoindex_events_1 (id=?)");
      expect(plan).not.toMatch(/SCAN events|events_agency_sequence/);
    }
    expect(await planOf(EVENT_TYPE_NAMES)).toContain(
      "USING INDEX events_agency_sequence (agency_id=? AND sequence>? AND sequence<?)",
    );
  });

  it("pages a key that reads some types past any number of events it may not read, reading only a page's worth", async () => {
    const { t, s0 } = await tenant({ scopes: ["webhooks:read", "listings:read", "users:read"] });
    await writeEvents(t.agencyId, 4);
    const d = db();
    const hidden = Array.from({ length: 300 }, () =>
      d.insert(events).values({
        id: newId("evt"),
        agencyId: t.agencyId,
        eventType: "invoice.payment_made",
        apiVersion: "2026-11-01",
        timestamp: Math.floor(Date.now() / 1000),
        data: { invoice_id: "inv_hidden" },
        createdAt: new Date().toISOString(),
      }),
    );
    for (let i = 0; i < hidden.length; i += 20) {
      const chunk = hidden.slice(i, i + 20);
      await d.batch(chunk as [(typeof chunk)[0], ...typeof chunk]);
    }
    await writeEvents(t.agencyId, 5);
    const last = s0 + 309;
    const seen = await feed(t.key, s0);
    expect(seen.sequences).toEqual([...range(s0 + 1, s0 + 4), ...range(s0 + 305, last)]);
    expect(seen.items.map((e) => e.event_type)).toEqual([
      "user.deactivated",
      "listing.status_changed",
      "user.deactivated",
      "listing.status_changed",
      "user.deactivated",
      "listing.status_changed",
      "user.deactivated",
      "listing.status_changed",
      "user.deactivated",
    ]);
    expect(seen.last).toBe(last);
    // The page after the fourth event reads the entries of the two readable types, not the 300 between.
    const readable = readableEventTypes(new Set(["listings:read", "users:read"] as const));
    const { sql: text, params } = feedRows(db(), t.agencyId, { readable }, s0 + 4, last, 8).toSQL();
    const read = await env.DB.prepare(text)
      .bind(...params)
      .all();
    expect(read.results).toHaveLength(5);
    expect(read.meta.rows_read).toBeLessThan(60);
    const walked = feedRows(db(), t.agencyId, { readable: EVENT_TYPE_NAMES }, s0 + 4, last, 8).toSQL();
    const all = await env.DB.prepare(walked.sql)
      .bind(...walked.params)
      .all();
    expect(all.results).toHaveLength(8);
  });

  it("never shows another agency's events", async () => {
    const a = await tenant();
    const b = await tenant();
    await writeEvents(a.t.agencyId, 6);
    await writeEvents(b.t.agencyId, 3);
    const ofB = await feed(b.t.key, 0);
    expect(ofB.sequences).toEqual(range(1, b.s0 + 3));
    expect(ofB.last).toBe(b.s0 + 3);
    expect(ofB.items.map((e) => e.event_id)).toEqual((await stored(b.t.agencyId)).map((e) => e.id));
    const idsOfA = (await stored(a.t.agencyId)).map((e) => e.id);
    expect(ofB.items.some((e) => idsOfA.includes(e.event_id))).toBe(false);
    // B's position past its own end shows nothing of A's later numbers.
    const past = await call(`/api/v1/events?after_sequence=${b.s0 + 3}`, { key: b.t.key });
    expect(past.json, past.text).toEqual({ data: [], next_cursor: "", last_sequence: b.s0 + 3 });
  });

  it("refuses a malformed after_sequence, a time window with it, and a cursor of another position", async () => {
    const t = await makeTenant();
    await writeEvents(t.agencyId, 4);
    for (const bad of ["-1", "abc", "1.5"]) {
      expectError(await call(`/api/v1/events?after_sequence=${bad}`, { key: t.key }), 422, "request_query_invalid");
    }
    const windowed = await call("/api/v1/events?after_sequence=0&created_after=2026-11-01T00:00:00Z", { key: t.key });
    expectError(windowed, 422, "request_query_invalid");
    expect(windowed.json.error.details.errors[0].field).toBe("created_after");
    expectError(
      await call("/api/v1/events?after_sequence=0&created_before=2026-11-01T00:00:00Z", { key: t.key }),
      422,
      "request_query_invalid",
    );
    const first = await call("/api/v1/events?after_sequence=0&limit=1", { key: t.key });
    expect(first.json.next_cursor, first.text).not.toBe("");
    const cursor = encodeURIComponent(first.json.next_cursor);
    expectError(
      await call(`/api/v1/events?after_sequence=1&limit=1&cursor=${cursor}`, { key: t.key }),
      422,
      "request_query_invalid",
    );
    expectError(await call(`/api/v1/events?limit=1&cursor=${cursor}`, { key: t.key }), 422, "request_query_invalid");
  });
});
