import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq, lte } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { events, webhookDeliveries, webhookReplays } from "../../src/db/schema";
import { setAgencyQuotas } from "../../src/domain/quotas";
import { call, db, expectError, internal, makeListing, makeTenant, type Tenant } from "../support/harness";
import { type Signal, signal } from "../support/signal";
import { consume, cron, drained, WEBHOOK_QUEUE } from "../support/webhook-harness";

const URL = "http://localhost:9999/replays";

/** What the receiver was sent: each request's envelope, its replay marker, and what it answered. */
interface Receipt {
  eventId: string;
  sequence: number;
  replayId: string | null;
  header: string | null;
  status: number;
  body: string;
  headers: Headers;
}

/**
 * A receiver that can be taken down (503) and whose answers to replay deliveries can be
 * held (`hold()` until `release()`), so a test can act while a replay is under way.
 */
function receiver() {
  const state = {
    down: false,
    receipts: [] as Receipt[],
    sent: [] as string[],
    held: undefined as Signal | undefined,
    release: () => {},
    replayStarted: undefined as Signal | undefined,
  };
  vi.spyOn(globalThis, "fetch").mockImplementation(async (input, init) => {
    const req = new Request(input, init);
    const body = await req.text();
    const envelope = JSON.parse(body);
    const header = req.headers.get("X-Webhook-Replay");
    if (header && state.held) {
      state.replayStarted?.raise();
      await state.held.wait(15_000);
    }
    const status = state.down ? 503 : 200;
    state.receipts.push({
      eventId: envelope.event_id,
      sequence: envelope.sequence,
      replayId: envelope.replay_id ?? null,
      header,
      status,
      body,
      headers: req.headers,
    });
    return new Response(status === 200 ? "ok" : "down", { status });
  });
  // The live consumer's messages are captured and consumed by the test itself.
  vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockImplementation(async (messages) => {
    for (const m of messages) state.sent.push((m.body as { delivery_id: string }).delivery_id);
    return {} as QueueSendBatchResponse;
  });
  return {
    state,
    /** Holds every replay delivery until release(); resolves once the first is held. */
    hold() {
      const release = signal("the held replay deliveries released");
      state.held = release;
      state.release = () => {
        state.held = undefined;
        release.raise();
      };
      state.replayStarted = signal("a replay delivery held");
      return state.replayStarted.wait();
    },
    /** Delivers what the outbox holds through the live consumer. */
    async deliverLive() {
      await drained();
      const ids = state.sent.splice(0);
      if (ids.length)
        await consume(
          WEBHOOK_QUEUE,
          ids.map((delivery_id) => ({ delivery_id })),
        );
    },
    /** Each event the receiver accepted, once (receivers deduplicate on `event_id`). */
    accepted: () => [...new Set(state.receipts.filter((r) => r.status === 200).map((r) => r.eventId))],
  };
}

beforeEach(() => vi.restoreAllMocks());
afterEach(() => vi.restoreAllMocks());

async function register(t: Tenant, body: Record<string, unknown> = {}) {
  const r = await call("/api/v1/webhooks/endpoints", {
    key: t.key,
    body: { url: URL, event_types: ["listing.created"], ...body },
  });
  expect(r.status, r.text).toBe(201);
  return r.json as { id: string; signing_secret: string };
}

const replays = (endpointId: string) => `/api/v1/webhooks/endpoints/${endpointId}/replays`;

async function startReplay(t: Tenant, endpointId: string, body: Record<string, unknown>) {
  const r = await call(replays(endpointId), { key: t.key, body });
  expect(r.status, r.text).toBe(202);
  return r.json as { replay_id: string; status: string; from_sequence: number; to_sequence: number };
}

/** Waits for the replay's driver to finish it, and answers the replay. */
async function finished(t: Tenant, endpointId: string, replayId: string) {
  let last: any;
  await vi.waitFor(
    async () => {
      const r = await call(`${replays(endpointId)}/${replayId}`, { key: t.key });
      expect(r.status, r.text).toBe(200);
      last = r.json;
      expect(last.status).not.toBe("running");
    },
    { timeout: 15_000, interval: 50 },
  );
  await idle(endpointId);
  return last;
}

/** Waits until the endpoint's replayer has let its replay go (its last step ended), so nothing outlives the test. */
async function idle(endpointId: string) {
  const stub = env.WEBHOOK_REPLAYER.getByName(endpointId);
  await vi.waitFor(
    async () => expect(await runInDurableObject(stub, (_, state) => state.storage.get("job"))).toBeUndefined(),
    { timeout: 15_000, interval: 50 },
  );
}

/** The agency's events of one type, in sequence order. */
const eventsOf = (agencyId: string) =>
  db()
    .select({ id: events.id, sequence: events.sequence })
    .from(events)
    .where(and(eq(events.agencyId, agencyId), eq(events.eventType, "listing.created")))
    .orderBy(events.sequence);

describe("webhook replays", () => {
  it("recover an outage: every event once by event_id, the replay in order, live events delivered meanwhile", async () => {
    const t = await makeTenant();
    const hook = await register(t);
    const rx = receiver();
    for (let i = 0; i < 3; i++) await makeListing(t);
    await rx.deliverLive();
    const lastSeen = Math.max(...rx.state.receipts.map((r) => r.sequence));
    expect(rx.accepted()).toHaveLength(3);

    rx.state.down = true;
    for (let i = 0; i < 6; i++) await makeListing(t);
    await rx.deliverLive();
    expect(rx.accepted()).toHaveLength(3);
    rx.state.down = false;

    const started = rx.hold();
    const replay = await startReplay(t, hook.id, { after_sequence: lastSeen });
    expect(replay.status).toBe("running");
    await started;
    // Written while the replay is held at its first delivery: these go out live, beside it.
    for (let i = 0; i < 2; i++) await makeListing(t);
    await rx.deliverLive();
    const during = await call(`${replays(hook.id)}/${replay.replay_id}`, { key: t.key });
    expect(during.json.status).toBe("running");
    rx.state.release();

    const done = await finished(t, hook.id, replay.replay_id);
    expect(done).toMatchObject({ status: "done", events_total: 6, events_sent: 6, events_skipped: 0 });
    const all = await eventsOf(t.agencyId);
    expect(all).toHaveLength(11);
    expect(rx.accepted().sort()).toEqual(all.map((e) => e.id).sort());
    const replayed = rx.state.receipts.filter((r) => r.header !== null);
    expect(replayed.map((r) => r.sequence)).toEqual(
      all.filter((e) => e.sequence! > lastSeen && e.sequence! <= replay.to_sequence).map((e) => e.sequence),
    );
    for (const r of replayed) expect([r.header, r.replayId]).toEqual([replay.replay_id, replay.replay_id]);
    // The live events written during the replay are outside its range, and were delivered live.
    const live = all.slice(-2);
    for (const e of live) {
      expect(e.sequence!).toBeGreaterThan(replay.to_sequence);
      expect(rx.state.receipts.some((r) => r.eventId === e.id && r.header === null && r.status === 200)).toBe(true);
    }
    // Each replayed event is a delivery of its own in the log, beside its failed live one.
    const log = await call(`/api/v1/webhooks/endpoints/${hook.id}/deliveries?limit=100`, { key: t.key });
    const entries = log.json.data as { event_id: string; replay_id: string | null; status: string }[];
    expect(entries.filter((d) => d.replay_id === replay.replay_id && d.status === "delivered")).toHaveLength(6);
  });

  it("backfill an endpoint registered after 50 events with all 50, signed and in order", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 50; i++) await makeListing(t);
    await drained();
    const hook = await register(t);
    const rx = receiver();
    const replay = await startReplay(t, hook.id, { after_sequence: 0 });
    const done = await finished(t, hook.id, replay.replay_id);
    expect(done).toMatchObject({ status: "done", events_total: 50, events_sent: 50 });
    const all = await eventsOf(t.agencyId);
    expect(all).toHaveLength(50);
    expect(rx.state.receipts.map((r) => r.eventId)).toEqual(all.map((e) => e.id));
    const verifier = new Webhook(hook.signing_secret.slice("whsec_".length));
    const first = rx.state.receipts[0]!;
    const verified = verifier.verify(first.body, {
      "webhook-id": first.headers.get("webhook-id")!,
      "webhook-timestamp": first.headers.get("webhook-timestamp")!,
      "webhook-signature": first.headers.get("webhook-signature")!,
    }) as { event_id: string; replay_id: string };
    expect(verified).toMatchObject({ event_id: all[0]!.id, replay_id: replay.replay_id });
  });

  it("send only what the filters select, and with only_failed only the events that died", async () => {
    const t = await makeTenant();
    const numbers = ["rpf0001", "rpf0002", "rpf0003", "rpf0004"];
    for (const n of numbers) await makeListing(t, { listingNumber: n });
    await drained();
    const hook = await register(t, { filters: [{ path: "data.listing_number", in: ["rpf0001", "rpf0003"] }] });
    const rx = receiver();
    const filtered = await startReplay(t, hook.id, { after_sequence: 0 });
    expect(await finished(t, hook.id, filtered.replay_id)).toMatchObject({
      events_total: 4,
      events_sent: 2,
      events_skipped: 2,
    });
    const sent = rx.state.receipts.map((r) => JSON.parse(r.body).data.listing_number);
    expect(sent).toEqual(["rpf0001", "rpf0003"]);

    // The first replay's delivery of rpf0003 dies; only it is sent again.
    const all = await eventsOf(t.agencyId);
    await db()
      .update(webhookDeliveries)
      .set({ status: "dead" })
      .where(and(eq(webhookDeliveries.endpointId, hook.id), eq(webhookDeliveries.eventId, all[2]!.id)));
    rx.state.receipts.length = 0;
    const failed = await startReplay(t, hook.id, { after_sequence: 0, only_failed: true });
    expect(await finished(t, hook.id, failed.replay_id)).toMatchObject({ events_sent: 1, events_skipped: 3 });
    expect(rx.state.receipts.map((r) => r.eventId)).toEqual([all[2]!.id]);
  });

  it("refuse a range reaching past retention, naming the oldest sequence kept", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 4; i++) await makeListing(t);
    const hook = await register(t);
    const all = await eventsOf(t.agencyId);
    const sequences = all.map((e) => e.sequence!);
    // The agency's first events (whatever their type) fall out of the 30-day window.
    const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
    await db()
      .update(events)
      .set({ createdAt: old })
      .where(and(eq(events.agencyId, t.agencyId), lte(events.sequence, sequences[1]!)));
    const oldest = sequences[1]! + 1;
    for (const body of [{ after_sequence: 0 }, { since: new Date(Date.now() - 40 * 86_400_000).toISOString() }]) {
      const r = await call(replays(hook.id), { key: t.key, body });
      expectError(r, 422, "webhook_replay_range_expired");
      expect(r.json.error.details.oldest_sequence).toBe(oldest);
    }
    receiver();
    const kept = await startReplay(t, hook.id, { after_sequence: oldest - 1 });
    expect(kept.from_sequence).toBe(oldest);
    expect((await finished(t, hook.id, kept.replay_id)).events_sent).toBe(2);
  });

  it("run one at a time per endpoint: a second is 409 until the first is cancelled", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 3; i++) await makeListing(t);
    const hook = await register(t);
    const rx = receiver();
    const started = rx.hold();
    const first = await startReplay(t, hook.id, { after_sequence: 0 });
    await started;
    const second = await call(replays(hook.id), { key: t.key, body: { after_sequence: 1 } });
    expectError(second, 409, "webhook_replay_running");
    expect(second.json.error.details.replay_id).toBe(first.replay_id);
    const cancelled = await call(`${replays(hook.id)}/${first.replay_id}`, { key: t.key, method: "DELETE" });
    expect(cancelled.status, cancelled.text).toBe(200);
    expect(cancelled.json).toMatchObject({ status: "cancelled", reason: "cancelled" });
    rx.state.release();
    const third = await startReplay(t, hook.id, { after_sequence: 0 });
    await finished(t, hook.id, third.replay_id);
    // The cancelled replay sent nothing past the step it was in.
    const after = await call(`${replays(hook.id)}/${first.replay_id}`, { key: t.key });
    expect(after.json.status).toBe("cancelled");
  });

  it("can be started, read and cancelled by an operator for an agency's endpoint", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    for (let i = 0; i < 2; i++) await makeListing(t);
    const hook = await register(t);
    const rx = receiver();
    const started = rx.hold();
    const path = `/internal/v1/agencies/${t.agencyId}/webhook-endpoints/${hook.id}/replays`;
    const r = await internal(path, { body: { after_sequence: 0 } });
    expect(r.status, r.text).toBe(202);
    await started;
    const read = await internal(`${path}/${r.json.replay_id}`);
    expect(read.json).toMatchObject({ replay_id: r.json.replay_id, status: "running", events_total: 2 });
    const stopped = await internal(`${path}/${r.json.replay_id}`, { method: "DELETE" });
    expect(stopped.json).toMatchObject({ status: "cancelled" });
    rx.state.release();
    await idle(hook.id);
    // The agency in the path holds the endpoint: another agency's path does not reach it.
    const elsewhere = await internal(`/internal/v1/agencies/${other.agencyId}/webhook-endpoints/${hook.id}/replays`, {
      body: { after_sequence: 0 },
    });
    expectError(elsewhere, 404, "webhook_endpoint_not_found");
  });

  it("are refused at once when the range cannot fit the agency's deliveries quota", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 3; i++) await makeListing(t);
    await drained();
    const hook = await register(t);
    await setAgencyQuotas(db(), t.agencyId, { webhook_deliveries: 2 });
    const refused = await call(replays(hook.id), { key: t.key, body: { after_sequence: 0 } });
    expectError(refused, 409, "agency_quota_exceeded");
    expect(refused.json.error.details).toMatchObject({ resource: "webhook_deliveries", limit: 2, requested: 3 });
    const stored = await db().select().from(webhookReplays).where(eq(webhookReplays.endpointId, hook.id));
    expect(stored).toEqual([]);
  });

  it("go on after a lost wake-up, and are forgotten 30 days after they finish", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 2; i++) await makeListing(t);
    await drained();
    const hook = await register(t);
    const rx = receiver();
    // A replay recorded as running whose driver was never woken, as after a failed wake-up.
    const at = new Date(Date.now() - 10 * 60_000).toISOString();
    await db().insert(webhookReplays).values({
      id: "rpl_lostwake",
      agencyId: t.agencyId,
      endpointId: hook.id,
      fromSequence: 1,
      toSequence: 1_000,
      cursor: 0,
      eventsTotal: 2,
      createdAt: at,
      updatedAt: at,
    });
    await cron("* * * * *");
    const done = await finished(t, hook.id, "rpl_lostwake");
    expect(done).toMatchObject({ status: "done", events_sent: 2 });
    expect(rx.state.receipts.filter((r) => r.replayId === "rpl_lostwake")).toHaveLength(2);

    const old = new Date(Date.now() - 31 * 86_400_000).toISOString();
    await db().update(webhookReplays).set({ finishedAt: old }).where(eq(webhookReplays.id, "rpl_lostwake"));
    await cron("0 3 * * *");
    const left = await db().select().from(webhookReplays).where(eq(webhookReplays.endpointId, hook.id));
    expect(left).toEqual([]);
  });

  it("answer a repeated start with the same replay, and refuse bad ranges and other agencies' replays", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    await makeListing(t);
    const hook = await register(t);
    receiver();
    const key = crypto.randomUUID();
    const a = await call(replays(hook.id), { key: t.key, body: { after_sequence: 0 }, idempotencyKey: key });
    const b = await call(replays(hook.id), { key: t.key, body: { after_sequence: 0 }, idempotencyKey: key });
    expect(a.status, a.text).toBe(202);
    expect(b.status, b.text).toBe(202);
    expect(b.json.replay_id).toBe(a.json.replay_id);
    await finished(t, hook.id, a.json.replay_id);

    expectError(await call(replays(hook.id), { key: t.key, body: {} }), 422, "validation_missing_required");
    expectError(
      await call(replays(hook.id), { key: t.key, body: { after_sequence: 0, since: "2026-11-01T00:00:00Z" } }),
      422,
      "validation.failed",
    );
    expectError(
      await call(replays(hook.id), { key: t.key, body: { after_sequence: 1_000_000 } }),
      422,
      "webhook_replay_range_invalid",
    );
    expectError(
      await call(replays(hook.id), { key: t.key, body: { after_sequence: 1, until_sequence: 0 } }),
      422,
      "webhook_replay_range_invalid",
    );
    expectError(await call(`${replays(hook.id)}/rpl_missing`, { key: t.key }), 404, "webhook_replay_not_found");
    expectError(
      await call(`${replays(hook.id)}/${a.json.replay_id}`, { key: other.key }),
      404,
      "webhook_endpoint_not_found",
    );
    expectError(
      await call(replays(hook.id), { key: other.key, body: { after_sequence: 0 } }),
      404,
      "webhook_endpoint_not_found",
    );
  });
});
