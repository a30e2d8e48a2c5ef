import { env } from "cloudflare:workers";
import { and, eq, inArray, like } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, quotaDefaults, webhookDeliveries, webhookDeliveryAttempts } from "../../src/db/schema";
import { outboxInsert } from "../../src/domain/events/outbox";
import { createAgency } from "../../src/domain/people/hierarchy";
import {
  RETENTION_MINUTE_STATEMENTS,
  RETENTION_PAGE,
  RETENTION_ROWS_PER_DAY,
  sweepRetention,
} from "../../src/webhooks/retention";
import { db, makeListing, makeTenant, unique } from "../support/harness";
import { consume, cron, drained, interceptWebhooks, registerEndpoint, WEBHOOK_QUEUE } from "../support/webhook-harness";

beforeEach(() => {
  interceptWebhooks();
});
afterEach(() => vi.restoreAllMocks());

const DAY = 24 * 3600 * 1000;
const old = () => new Date(Date.now() - 31 * DAY).toISOString();

const eventIds = async (ids: string[]) =>
  (await db().select({ id: events.id }).from(events).where(inArray(events.id, ids))).map((r) => r.id).sort();
const deliveryIds = async (ids: string[]) =>
  (await db().select({ id: webhookDeliveries.id }).from(webhookDeliveries).where(inArray(webhookDeliveries.id, ids)))
    .map((r) => r.id)
    .sort();
const attemptsOf = async (deliveryId: string) =>
  db().select().from(webhookDeliveryAttempts).where(eq(webhookDeliveryAttempts.deliveryId, deliveryId));

/**
 * `n` events of `agencyId` written at `at`, each with a delivered delivery and one attempt,
 * ids tagged with `tag`: one statement per table.
 */
async function seedSettled(agencyId: string, tag: string, n: number, at: string) {
  const series = `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${n})`;
  await env.DB.batch([
    env.DB.prepare(
      `INSERT INTO events (id, agency_id, event_type, api_version, timestamp, data, enqueued_at, created_at) ` +
        `${series} SELECT 'evt_' || ?1 || '_' || i, ?2, 'user.deactivated', '2026-11-01', 0, '{}', ?3, ?3 FROM n`,
    ).bind(tag, agencyId, at),
    env.DB.prepare(
      `INSERT INTO webhook_deliveries (id, event_id, endpoint_id, agency_id, status, attempts, created_at, updated_at) ` +
        `${series} SELECT 'whd_' || ?1 || '_' || i, 'evt_' || ?1 || '_' || i, 'we_' || ?1, ?2, 'delivered', 1, ?3, ?3 FROM n`,
    ).bind(tag, agencyId, at),
    env.DB.prepare(
      `INSERT INTO webhook_delivery_attempts (id, delivery_id, attempt, attempted_at, response_status, latency_ms) ` +
        `${series} SELECT 'wha_' || ?1 || '_' || i, 'whd_' || ?1 || '_' || i, 1, ?2, 200, 5 FROM n`,
    ).bind(tag, at),
  ]);
}

describe("the nightly retention sweep", () => {
  it("deletes events past 30 days with their settled deliveries and attempts, and nothing else", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/retention", ["listing.created"]);
    for (let i = 0; i < 3; i++) await makeListing(t);
    await drained();
    const [expired, replayed, pending] = await db()
      .select()
      .from(webhookDeliveries)
      .where(eq(webhookDeliveries.endpointId, hook.id))
      .orderBy(webhookDeliveries.createdAt, webhookDeliveries.id);
    await consume(WEBHOOK_QUEUE, [{ delivery_id: expired!.id }, { delivery_id: replayed!.id }]);
    const at = old();
    // All three events are old. `expired` settled long ago; `replayed` was delivered again
    // yesterday; `pending` is still being retried after a replay.
    const three = [expired!.eventId, replayed!.eventId, pending!.eventId];
    await db().update(events).set({ createdAt: at }).where(inArray(events.id, three));
    await db()
      .update(webhookDeliveries)
      .set({ createdAt: at, updatedAt: at })
      .where(eq(webhookDeliveries.id, expired!.id));
    await db()
      .update(webhookDeliveries)
      .set({ createdAt: at, updatedAt: new Date(Date.now() - 2 * 3600_000).toISOString() })
      .where(eq(webhookDeliveries.id, pending!.id));
    await db().update(webhookDeliveries).set({ createdAt: at }).where(eq(webhookDeliveries.id, replayed!.id));
    await db()
      .update(webhookDeliveryAttempts)
      .set({ attemptedAt: at })
      .where(eq(webhookDeliveryAttempts.deliveryId, expired!.id));
    // An old event no endpoint received, one the outbox has not sent yet, and a recent one.
    const d = db();
    const [[noDeliveries], [unsent], [recent]] = await d.batch([
      outboxInsert(d, t.agencyId, "user.deactivated", { user_id: "usr_1", reason: "deactivated" }).returning(),
      outboxInsert(d, t.agencyId, "user.deactivated", { user_id: "usr_2", reason: "deactivated" }).returning(),
      outboxInsert(d, t.agencyId, "user.deactivated", { user_id: "usr_3", reason: "deactivated" }).returning(),
    ]);
    await d.update(events).set({ createdAt: at, enqueuedAt: at }).where(eq(events.id, noDeliveries!.id));
    await d.update(events).set({ createdAt: at, enqueuedAt: null }).where(eq(events.id, unsent!.id));
    await d.update(events).set({ enqueuedAt: new Date().toISOString() }).where(eq(events.id, recent!.id));

    await cron("0 3 * * *");

    expect(await deliveryIds([expired!.id, replayed!.id, pending!.id])).toEqual([replayed!.id, pending!.id].sort());
    expect(await attemptsOf(expired!.id)).toEqual([]);
    expect(await attemptsOf(replayed!.id)).toHaveLength(1);
    expect(await eventIds([...three, noDeliveries!.id, unsent!.id, recent!.id])).toEqual(
      [replayed!.eventId, pending!.eventId, unsent!.id, recent!.id].sort(),
    );
    expect((await d.select().from(webhookDeliveries).where(eq(webhookDeliveries.id, pending!.id)).get())!.status).toBe(
      "pending",
    );
  });

  it("never deletes a pending delivery, however old, nor its attempts and event", async () => {
    const t = await makeTenant();
    const hook = await registerEndpoint(t, "http://localhost:9999/pending", ["listing.created"]);
    await makeListing(t);
    await drained();
    const [delivery] = await db().select().from(webhookDeliveries).where(eq(webhookDeliveries.endpointId, hook.id));
    vi.mocked(globalThis.fetch).mockResolvedValue(new Response("down", { status: 503 }));
    await consume(WEBHOOK_QUEUE, [{ delivery_id: delivery!.id }]);
    const at = old();
    await db().update(events).set({ createdAt: at }).where(eq(events.id, delivery!.eventId));
    await db()
      .update(webhookDeliveries)
      .set({ createdAt: at, updatedAt: at })
      .where(eq(webhookDeliveries.id, delivery!.id));
    await db()
      .update(webhookDeliveryAttempts)
      .set({ attemptedAt: at })
      .where(eq(webhookDeliveryAttempts.deliveryId, delivery!.id));
    expect(await sweepRetention(env)).toMatchObject({ complete: true });
    expect(await deliveryIds([delivery!.id])).toEqual([delivery!.id]);
    expect(await attemptsOf(delivery!.id)).toHaveLength(1);
    expect(await eventIds([delivery!.eventId])).toEqual([delivery!.eventId]);
  });

  it("deletes in pages of 500 rows, stops at its statement budget and continues the next run", async () => {
    // An agency with no event yet: its 600 old events are its first numbers (an event is
    // never recorded as older than the one before it).
    const t = { agencyId: (await createAgency(db(), { name: unique("agency"), kind: "media_agency" })).id };
    const tag = unique("bulk").replaceAll("-", "_");
    const at = old();
    const n = 600;
    await seedSettled(t.agencyId, tag, n, at);
    const left = async () => ({
      events: (
        await db()
          .select({ id: events.id })
          .from(events)
          .where(like(events.id, `evt_${tag}_%`))
      ).length,
      deliveries: (
        await db()
          .select({ id: webhookDeliveries.id })
          .from(webhookDeliveries)
          .where(and(eq(webhookDeliveries.agencyId, t.agencyId), like(webhookDeliveries.id, `whd_${tag}_%`)))
      ).length,
      attempts: (
        await db()
          .select({ id: webhookDeliveryAttempts.id })
          .from(webhookDeliveryAttempts)
          .where(like(webhookDeliveryAttempts.id, `wha_${tag}_%`))
      ).length,
    });
    expect(await left()).toEqual({ events: n, deliveries: n, attempts: n });
    expect(RETENTION_PAGE).toBe(500);

    // Attempts first (500, then 100), then the first page of deliveries: the budget is spent.
    const first = await sweepRetention(env, Date.now(), 3);
    expect(first).toEqual({ attempts: n, deliveries: RETENTION_PAGE, events: 0, statements: 3, complete: false });
    expect(await left()).toEqual({ events: n, deliveries: n - RETENTION_PAGE, attempts: 0 });

    const next = await sweepRetention(env, Date.now());
    expect(next).toMatchObject({ attempts: 0, deliveries: n - RETENTION_PAGE, complete: true });
    expect(next.events).toBeGreaterThanOrEqual(n);
    expect(await left()).toEqual({ events: 0, deliveries: 0, attempts: 0 });
  });
});

/**
 * Agencies at their full default quotas of events, deliveries and attempts that one
 * database's retention keeps pace with (docs/limits.md, "Retention keeps pace").
 */
const FULL_AGENCIES_PER_DATABASE = 22;

describe("retention keeps pace with the quotas", () => {
  it("removes in a day more than the agencies of a database may hold of what it sweeps", async () => {
    const defaults = new Map((await db().select().from(quotaDefaults)).map((q) => [q.resource, q.quota] as const));
    const perAgency = ["events", "webhook_deliveries", "webhook_attempts"].reduce((sum, r) => {
      expect(defaults.has(r), r).toBe(true);
      return sum + defaults.get(r)!;
    }, 0);
    // An agency holds at most its quotas; what falls due in a day is some of what it holds.
    expect(perAgency).toBe(1_300_000);
    expect(RETENTION_ROWS_PER_DAY).toBe(29_000_000);
    expect(RETENTION_ROWS_PER_DAY).toBeGreaterThan(FULL_AGENCIES_PER_DATABASE * perAgency);
  });

  it("each minute's run removes its full figure while more is due, and no more", async () => {
    const t = { agencyId: (await createAgency(db(), { name: unique("agency"), kind: "media_agency" })).id };
    const tag = unique("minute").replaceAll("-", "_");
    const at = old();
    const figure = RETENTION_MINUTE_STATEMENTS * RETENTION_PAGE;
    const n = figure + 700;
    await seedSettled(t.agencyId, tag, n, at);
    const count = async (table: "events" | "webhook_deliveries" | "webhook_delivery_attempts", prefix: string) =>
      (
        await env.DB.prepare(`SELECT count(*) AS n FROM ${table} WHERE id LIKE ?`)
          .bind(`${prefix}_${tag}_%`)
          .first<{ n: number }>()
      )?.n;
    await cron("* * * * *");
    // Attempts go first: exactly the figure of them, nothing else yet.
    expect(await count("webhook_delivery_attempts", "wha")).toBe(n - figure);
    expect(await count("webhook_deliveries", "whd")).toBe(n);
    expect(await count("events", "evt")).toBe(n);
    await cron("* * * * *");
    expect(await count("webhook_delivery_attempts", "wha")).toBe(0);
    expect(await count("webhook_deliveries", "whd")).toBe(n - (figure - RETENTION_PAGE * 2));
  });
});
