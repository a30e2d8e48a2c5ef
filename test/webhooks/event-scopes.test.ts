import { env } from "cloudflare:workers";
import { asc, eq, inArray } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { type Db, database } from "../../src/db/client";
import { events, webhookEndpoints } from "../../src/db/schema";
import { mintKey } from "../../src/domain/api-keys";
import { readableEventTypes } from "../../src/domain/events/access";
import { EVENT_TYPE_NAMES } from "../../src/domain/events/catalog";
import { pageEvents } from "../../src/domain/events/log";
import { createUser } from "../../src/domain/people/hierarchy";
import type { Scope } from "../../src/domain/roles";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { call, db, expectError, makeListing, makeTenant, type Tenant } from "../support/harness";
import { insertEvents } from "../support/webhook-fixtures";

/** Another key of the tenant's agency, minted by its owner with only `scopes`. */
async function keyWith(t: Tenant, scopes: Scope[]) {
  const { secret } = await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test", scopes });
  return secret;
}

const typesListed = async (key: string, query = "") => {
  const r = await call(`/api/v1/events?limit=200${query}`, { key });
  expect(r.status, r.text).toBe(200);
  return new Set<string>(r.json.data.map((e: { event_type: string }) => e.event_type));
};

const register = (key: string, body: Record<string, unknown>) =>
  call("/api/v1/webhooks/endpoints", { key, body: { url: "https://hooks.example.com/scoped", ...body } });

const LISTING_AND_MEDIA = EVENT_TYPE_NAMES.filter((t) => /^(listing|media)\./.test(t));

describe("events are read with the scope of their data", () => {
  it("the catalog names each type's read scope", async () => {
    const t = await makeTenant();
    const r = await call("/api/v1/webhooks/events", { key: t.key });
    expect(r.status, r.text).toBe(200);
    const scopeOf = Object.fromEntries(r.json.data.map((e: any) => [e.event_type, e.read_scope]));
    expect(scopeOf).toMatchObject({
      "listing.created": "listings:read",
      "media.delivery.failed": "listings:read",
      "user.signed_up": "users:read",
      "user.deactivated": "users:read",
      "invoice.payment_made": "orders:read",
      "subscription.cancelled": "orders:read",
      "appointment.scheduled": "scheduling:read",
      "appointment.orphan.detected": "scheduling:read",
    });
    expect(Object.keys(scopeOf)).toHaveLength(17);
  });

  it("the events API lists only the types the key's scopes read; a full key sees them all", async () => {
    // The tenant's own users signed up (user.signed_up); the listing adds listing.created.
    const t = await makeTenant();
    await makeListing(t);
    expect(await typesListed(t.key)).toEqual(new Set(["user.signed_up", "listing.created"]));
    expect(await typesListed(await keyWith(t, ["webhooks:read", "listings:read"]))).toEqual(
      new Set(["listing.created"]),
    );
    expect(await typesListed(await keyWith(t, ["webhooks:read", "users:read"]))).toEqual(new Set(["user.signed_up"]));
    expect(await typesListed(await keyWith(t, ["webhooks:read"]))).toEqual(new Set());
  });

  it("a type filter or an event the key may not read is 403 auth.scope_denied naming the scope", async () => {
    const t = await makeTenant();
    const narrow = await keyWith(t, ["webhooks:read", "listings:read"]);
    const filtered = await call("/api/v1/events?type=user.signed_up", { key: narrow });
    expectError(filtered, 403, "auth.scope_denied");
    expect(filtered.json.error.details).toEqual({
      required_scope: "users:read",
      missing_scopes: ["users:read"],
      event_types: ["user.signed_up"],
    });
    const [signedUp] = (await call("/api/v1/events?type=user.signed_up", { key: t.key })).json.data;
    const one = await call(`/api/v1/events/${signedUp.event_id}`, { key: narrow });
    expectError(one, 403, "auth.scope_denied");
    expect(one.json.error.details.required_scope, one.text).toBe("users:read");
    expect(one.text).not.toContain(signedUp.data.user_id);
    expect((await call(`/api/v1/events/${signedUp.event_id}`, { key: t.key })).status).toBe(200);
    await makeListing(t);
    expect(await typesListed(narrow, "&type=listing.created")).toEqual(new Set(["listing.created"]));
  });
});

describe("a key that reads some types", () => {
  it("is shown a last_sequence that says nothing of the events it may not read", async () => {
    const t = await makeTenant();
    const narrow = await keyWith(t, ["webhooks:read", "listings:read"]);
    const bare = await keyWith(t, ["webhooks:read"]);
    const lastOf = async (key: string, query = "") => {
      const r = await call(`/api/v1/events?limit=5${query}`, { key });
      expect(r.status, r.text).toBe(200);
      return r.json.last_sequence as number;
    };
    await makeListing(t);
    const listed = await lastOf(narrow);
    const full = await lastOf(t.key);
    expect(listed).toBe(full);
    // Five users sign up: the agency's sequence moves on, the listings-only key's does not.
    for (let i = 0; i < 5; i++) {
      await createUser(db(), {
        managerId: t.owner.id,
        role: "agent",
        name: `Signed ${i}`,
        email: `signed-${i}-${crypto.randomUUID()}@example.test`,
      });
    }
    expect(await lastOf(t.key)).toBe(full + 5);
    expect(await lastOf(narrow)).toBe(listed);
    expect(await lastOf(narrow, `&after_sequence=${listed}`)).toBe(listed);
    expect(await lastOf(bare)).toBe(0);
    expect(await lastOf(bare, "&after_sequence=2")).toBe(2);
    // Its feed from 0 still shows its own event, and stops at it.
    const feed = await call("/api/v1/events?after_sequence=0", { key: narrow });
    expect(feed.json.data.map((e: { sequence: number }) => e.sequence)).toEqual([listed]);
    await makeListing(t);
    expect(await lastOf(narrow)).toBe(full + 6);
  });

  /** Runs `read` on a database that notes each statement it binds; each is then run again for D1's rows read. */
  async function rowsRead(read: (d: Db) => Promise<unknown>): Promise<number[]> {
    const seen: { query: string; params: unknown[] }[] = [];
    const noting = new Proxy(env.DB, {
      get(target, prop) {
        if (prop !== "prepare") return Reflect.get(target, prop, target);
        return (query: string) => {
          const statement = target.prepare(query);
          return new Proxy(statement, {
            get(s, p) {
              if (p === "bind")
                return (...params: unknown[]) => {
                  seen.push({ query, params });
                  return s.bind(...params);
                };
              const value = Reflect.get(s, p, s);
              return typeof value === "function" ? value.bind(s) : value;
            },
          });
        };
      },
    });
    await read(database(noting));
    const counts: number[] = [];
    for (const { query, params } of seen)
      counts.push(
        (
          await env.DB.prepare(query)
            .bind(...params)
            .all()
        ).meta.rows_read,
      );
    return counts;
  }

  it("lists its types past any number of events it may not read, reading only a page's worth", async () => {
    const t = await makeTenant();
    const narrow = await keyWith(t, ["webhooks:read", "listings:read"]);
    const start = Date.now() - 3_600_000;
    const early = await insertEvents(t.agencyId, 3, { type: "listing.created", firstCreatedAt: start });
    await insertEvents(t.agencyId, 300, { type: "invoice.payment_made", firstCreatedAt: start + 1_000 });
    const late = await insertEvents(t.agencyId, 2, { type: "listing.status_changed", firstCreatedAt: start + 5_000 });
    const more = await insertEvents(t.agencyId, 2, { type: "media.delivery.completed", firstCreatedAt: start + 5_000 });
    const seen: string[] = [];
    let cursor = "";
    for (let page = 0; page < 10; page++) {
      const r = await call(`/api/v1/events?limit=2${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ""}`, {
        key: narrow,
      });
      expect(r.status, r.text).toBe(200);
      expect(r.json.data.length, r.text).toBeLessThanOrEqual(2);
      seen.push(...r.json.data.map((e: { event_id: string }) => e.event_id));
      cursor = r.json.next_cursor;
      if (!cursor) break;
    }
    // Oldest first, ties broken by id, as every list of events is ordered.
    const mine = [...early, ...late, ...more];
    const stored = await db()
      .select({ id: events.id })
      .from(events)
      .where(inArray(events.id, mine))
      .orderBy(asc(events.createdAt), asc(events.id));
    expect(seen).toEqual(stored.map((e) => e.id));
    expect(seen).toHaveLength(7);
    // A first page of 4 reads the first entries of each readable type, not the 300 events of another scope.
    const readable = readableEventTypes(new Set<Scope>(["webhooks:read", "listings:read"]));
    const req = { keyring: keyringOf(env), limit: 4 };
    const reads = await rowsRead((d) => pageEvents(d, t.agencyId, { readable }, req));
    expect(reads).toHaveLength(1);
    expect(reads[0]).toBeLessThan(40);
    const walked = await rowsRead((d) => pageEvents(d, t.agencyId, { readable: EVENT_TYPE_NAMES }, req));
    expect(walked[0]).toBeLessThan(40);
  });
});

describe("subscriptions are held to the registering key's read scopes", () => {
  it("a type the key may not read is 403 auth.scope_denied naming the missing scopes; nothing stored", async () => {
    const t = await makeTenant();
    const narrow = await keyWith(t, ["webhooks:write", "webhooks:read", "listings:read"]);
    const r = await register(narrow, { event_types: ["listing.created", "user.deactivated", "invoice.payment_made"] });
    expectError(r, 403, "auth.scope_denied");
    expect(r.json.error.details).toEqual({
      required_scope: "users:read",
      missing_scopes: ["users:read", "orders:read"],
      event_types: ["user.deactivated", "invoice.payment_made"],
    });
    expect(await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.agencyId, t.agencyId))).toEqual([]);
    const ok = await register(narrow, { event_types: ["listing.created", "media.delivery.completed"] });
    expect(ok.status, ok.text).toBe(201);
    expect(ok.json.event_types).toEqual(["listing.created", "media.delivery.completed"]);
  });

  it("omitted event_types is every type for a full key, and only the readable types for a narrowed one", async () => {
    const t = await makeTenant();
    const all = await register(t.key, {});
    expect(all.status, all.text).toBe(201);
    expect(all.json.event_types).toBeNull();
    const narrow = await register(await keyWith(t, ["webhooks:write", "listings:read"]), {});
    expect(narrow.status, narrow.text).toBe(201);
    expect(narrow.json.event_types).toEqual(LISTING_AND_MEDIA);
    const none = await register(await keyWith(t, ["webhooks:write"]), {});
    expectError(none, 403, "auth.scope_denied");
    expect(none.json.error.details.missing_scopes).toEqual(
      expect.arrayContaining(["listings:read", "users:read", "orders:read", "scheduling:read"]),
    );
    const stored = await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.agencyId, t.agencyId));
    expect(stored.map((e) => e.eventTypes).sort()).toEqual([LISTING_AND_MEDIA, null]);
  });
});
