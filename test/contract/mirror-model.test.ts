import { env, exports } from "cloudflare:workers";
import { and, count, eq, inArray, lte, max } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { createMirror, type Mirror, type SyncEvent, verifyDelivery } from "../../examples/mirror.mjs";
import { events, webhookDeliveries, webhookDeliveryAttempts } from "../../src/db/schema";
import { mintKey, updateKey } from "../../src/domain/api-keys";
import { ENDPOINT_NAMES } from "../../src/domain/budgets";
import { SETTABLE_STATUSES } from "../../src/domain/listings/lifecycle";
import { TOUR_STATUSES } from "../../src/domain/tours";
import { drainOutbox } from "../../src/webhooks/outbox/drain";
import { FUZZ_SEED } from "../support/fuzz-kit";
import { BASE, call, captureErrorLogs, db, internal, makeTenant, mockFetch, type Tenant } from "../support/harness";
import { random } from "../support/random";
import { consume, registerEndpoint, settle, WEBHOOK_QUEUE } from "../support/webhook-harness";

// The example mirror against thousands of random changes across agencies and resources,
// with queue sends refused, receivers down and deliveries dropped at random: fed by the
// deliveries that got through and by the events feed, it must end equal to fresh reads of
// everything, with every sequence of every agency accounted for.
const AGENCIES = 4;
const STEPS = 500;
/** Changes between two rounds of delivery. */
const ROUND = 6;
const P_SEND_REFUSED = 0.08;
const P_RECEIVER_DOWN = 0.08;
/** Attempts of a delivery before the test gives it up, as a dead letter would be. */
const ATTEMPTS = 3;

const UNLIMITED = { rateLimitOverrides: Object.fromEntries(ENDPOINT_NAMES.map((n) => [n, 100_000])) };

/** The mirror's requests go to the Worker itself, past the mock that answers receivers. */
const selfFetch = (input: string, init?: RequestInit) => exports.default.fetch(new Request(input, init));

interface Agency {
  t: Tenant;
  hookId: string;
  mirror: Mirror;
  /** The same deliveries, without filling gaps: what a copy loses. */
  blind: Mirror;
  accounted: Set<number>;
  inbox: SyncEvent[];
  listings: { number: string; activated: boolean; cancelled: boolean }[];
  users: string[];
  tours: string[];
  mirrorKey: string;
  /** The endpoint's signing secret. */
  secret: string;
}

/** Canonical JSON (sorted keys), so two copies compare whatever order their maps were filled in. */
function canon(value: unknown): string {
  if (value instanceof Map) return canon(Object.fromEntries([...value.entries()].sort(([a], [b]) => (a < b ? -1 : 1))));
  if (Array.isArray(value)) return `[${value.map(canon).join(",")}]`;
  if (value && typeof value === "object")
    return `{${Object.keys(value)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canon((value as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  return JSON.stringify(value);
}

/** What a copy holds, in one comparable shape (a listing without orders holds none). */
const copyOf = (m: Pick<Mirror, "listings" | "users" | "orders" | "tours">) => ({
  listings: canon(m.listings),
  users: canon(m.users),
  orders: canon(new Map([...m.orders].filter(([, o]) => o.size > 0))),
  tours: canon(m.tours),
});

async function readAll(t: Tenant, path: string) {
  const items: Record<string, unknown>[] = [];
  let cursor = "";
  for (let page = 0; page < 100; page++) {
    const r = await call(`${path}?limit=200${cursor ? `&cursor=${cursor}` : ""}`, { key: t.key });
    expect(r.status, r.text).toBe(200);
    items.push(...r.json.data);
    cursor = r.json.next_cursor;
    if (!cursor) return items;
  }
  throw new Error(`${path}: too many pages`);
}

/** Every resource of the agency, read afresh through the API. */
async function freshReads(t: Tenant) {
  const listings = new Map((await readAll(t, "/api/v1/listings")).map((l) => [l.listing_number as string, l]));
  const users = new Map((await readAll(t, "/api/v1/users")).map((u) => [u.id as string, u]));
  const orders = new Map<string, Map<string, unknown>>();
  for (const n of listings.keys())
    orders.set(n, new Map((await readAll(t, `/api/v1/listings/${n}/orders`)).map((o) => [o.id as string, o])));
  const tours = new Map<string, unknown>();
  for (let page = 1; page <= 100; page++) {
    const r = await call(`/api/v1/tours?page=${page}&limit=100`, { key: t.key });
    expect(r.status, r.text).toBe(200);
    for (const s of r.json.tours) {
      const one = await call(`/api/v1/tours/${s.tour_number}`, { key: t.key });
      expect(one.status, one.text).toBe(200);
      tours.set(s.tour_number, one.json);
    }
    if (page >= r.json.pages) break;
  }
  return copyOf({ listings, users, orders, tours } as never);
}

async function lastSequence(agencyId: string) {
  const [row] = await db()
    .select({ n: count(), last: max(events.sequence) })
    .from(events)
    .where(eq(events.agencyId, agencyId));
  return { n: row!.n, last: row!.last ?? 0 };
}

describe("the example mirror, fed by webhooks and the feed, under loss", () => {
  it("ends equal to fresh reads of every agency, with no sequence missing", async () => {
    const rand = random(FUZZ_SEED + 25);
    const pick = <T>(xs: readonly T[]): T | undefined => xs[Math.floor(rand() * xs.length)];
    const logs = captureErrorLogs();

    // The queue: sends refused at random (the outbox keeps the events and a later drain sends them).
    const queued: { delivery_id: string; attempts: number }[] = [];
    let refusedSends = 0;
    const accept = (bodies: unknown[]) => {
      if (rand() < P_SEND_REFUSED) {
        refusedSends++;
        throw new Error("queue send refused by the test");
      }
      for (const b of bodies) queued.push({ delivery_id: (b as { delivery_id: string }).delivery_id, attempts: 1 });
    };
    vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockImplementation(async (messages) => {
      accept([...messages].map((m) => m.body));
      return {} as QueueSendBatchResponse;
    });
    vi.spyOn(env.WEBHOOK_QUEUE, "send").mockImplementation(async (body) => {
      accept([body]);
      return {} as QueueSendResponse;
    });

    // The receivers: each agency's answers 503 at random, and keeps what it accepted.
    const byUrl = new Map<string, Agency>();
    let receiverDown = 0;
    let unverified = 0;
    let viaWebhooks = 0;
    mockFetch(async (req) => {
      const agency = byUrl.get(req.url);
      if (!agency) return new Response("no such receiver", { status: 404 });
      if (rand() < P_RECEIVER_DOWN) {
        receiverDown++;
        return new Response("down", { status: 503 });
      }
      // Each delivery is taken as the example's receiver takes it: only once its signature verifies.
      const envelope = await verifyDelivery(await req.text(), req.headers.get("X-Webhook-Signature"), agency.secret);
      if (!envelope) unverified++;
      else agency.inbox.push(envelope);
      return new Response("ok");
    });

    const agencies: Agency[] = [];
    for (let i = 0; i < AGENCIES; i++) {
      const t = await makeTenant();
      await updateKey(db(), t.keyId, UNLIMITED);
      const { key, secret } = await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test" });
      await updateKey(db(), key.id, UNLIMITED);
      const url = `http://localhost:9999/mirror/${i}`;
      const hook = await registerEndpoint(t, url);
      const accounted = new Set<number>();
      const mirror = createMirror({
        baseUrl: BASE,
        apiKey: secret,
        fetch: selfFetch,
        onEvent: (e, source) => {
          accounted.add(e.sequence!);
          if (source === "webhook") viaWebhooks++;
        },
      });
      const blind = createMirror({ baseUrl: BASE, apiKey: secret, fetch: selfFetch, fillGaps: false });
      const agency: Agency = {
        t,
        hookId: hook.id,
        mirror,
        blind,
        accounted,
        inbox: [],
        listings: [],
        users: [t.teamLead.id, t.agent.id, t.viewer.id],
        tours: [],
        mirrorKey: secret,
        secret: hook.signing_secret,
      };
      byUrl.set(url, agency);
      agencies.push(agency);
    }

    const api = async (a: Agency, path: string, method: string, body?: unknown) => {
      const r = await call(path, { key: a.t.key, method, body });
      expect(r.status, `${method} ${path}: ${r.text}`).toBeLessThan(500);
      return r;
    };
    let dropsAsked = 0;
    const drop = async (a: Agency, n: number) => {
      const r = await api(a, `/api/v1/test_helpers/webhooks/endpoints/${a.hookId}/drop_deliveries`, "POST", {
        count: n,
      });
      expect(r.status, r.text).toBe(200);
      dropsAsked += n;
    };

    /** One random change of the agency's data, through the public API and the sandbox helpers. */
    async function change(a: Agency, step: number) {
      const live = a.listings.filter((l) => !l.cancelled);
      const listing = pick(live);
      const roll = rand() * 100;
      if (roll < 12 || !listing) {
        const owner = pick([a.t.owner.id, ...a.users]);
        const r = await api(a, "/api/v1/listings", "POST", {
          address: `${step} Harbour Street`,
          owner_user_id: owner,
          agent_one_id: pick(a.users),
        });
        if (r.status !== 201) return;
        const activated = rand() < 0.7;
        if (activated) {
          // Activation has no event: done before any delivery, as the listing's first read happens after it.
          const act = await internal(
            `/internal/v1/agencies/${a.t.agencyId}/listings/${r.json.listing_number}/activate`,
            {
              method: "POST",
            },
          );
          expect(act.status, act.text).toBe(200);
        }
        a.listings.push({ number: r.json.listing_number, activated, cancelled: false });
      } else if (roll < 28) {
        await api(a, `/api/v1/listings/${listing.number}/status`, "PATCH", { new_status: pick(SETTABLE_STATUSES) });
      } else if (roll < 36) {
        const op = pick(["set", "append"] as const)!;
        await api(a, `/api/v1/listings/${listing.number}/sections/floorplan`, "PATCH", {
          operation: op,
          url: `https://cdn.example.com/floorplans/${step}.pdf`,
        });
      } else if (roll < 43) {
        await api(
          a,
          `/api/v1/listings/${listing.number}/sections/matterport`,
          "PATCH",
          rand() < 0.7
            ? { operation: "set", url: `https://my.matterport.com/show/?m=m${step}` }
            : { operation: "remove" },
        );
      } else if (roll < 46) {
        const r = await api(a, `/api/v1/listings/${listing.number}/cancel`, "POST", {});
        if (r.status === 200 || r.status === 409) listing.cancelled = r.status === 200 || listing.cancelled;
      } else if (roll < 53) {
        await api(a, `/api/v1/test_helpers/listings/${listing.number}/edit`, "POST", {
          address: `${step} Quay Road`,
        });
      } else if (roll < 59) {
        await api(a, `/api/v1/test_helpers/listings/${listing.number}/invoices/pay`, "POST", {
          amount_minor: 1000 + step,
        });
      } else if (roll < 65) {
        const r = await api(a, "/api/v1/test_helpers/users", "POST", {
          manager_id: pick([a.t.owner.id, ...a.users]),
        });
        if (r.status === 201 || r.status === 200) a.users.push(r.json.id);
      } else if (roll < 68) {
        const user = pick(a.users);
        if (!user || a.users.length < 3) return;
        const r = await api(a, `/api/v1/test_helpers/users/${user}/deactivate`, "POST", {});
        if (r.status === 200) a.users = a.users.filter((u) => u !== user);
      } else if (roll < 73) {
        const user = pick(a.users);
        if (!user) return;
        await api(a, `/api/v1/test_helpers/users/${user}/move`, "POST", {
          manager_id: pick([a.t.owner.id, ...a.users.filter((u) => u !== user)]),
        });
      } else if (roll < 82) {
        const r = await api(a, "/api/v1/tours", "POST", {
          address: `${step} Tour Lane`,
          city: "Portside",
          state: "CA",
          zipcode: "94110",
        });
        expect(r.status, r.text).toBe(201);
        a.tours.push(r.json.tour_number);
      } else if (roll < 92) {
        const tour = pick(a.tours);
        if (!tour) return;
        await api(a, `/api/v1/tours/${tour}`, "PUT", {
          status: pick(TOUR_STATUSES),
          price: 500_000 + step,
          description: `Step ${step}`,
        });
      } else if (roll < 96) {
        const tour = pick(a.tours);
        if (!tour) return;
        const r = await api(a, `/api/v1/tours/${tour}`, "DELETE");
        if (r.status === 204) a.tours = a.tours.filter((n) => n !== tour);
      } else {
        await drop(a, 1 + Math.floor(rand() * 3));
      }
    }

    /**
     * One round of delivery: drain the outbox (a refused send leaves its events for the next
     * drain), run the consumer on what was queued, retrying what failed a few times before
     * giving it up, then hand each agency's accepted deliveries to its mirrors, shuffled and
     * some twice.
     */
    let givenUp = 0;
    async function deliver() {
      await settle();
      await drainOutbox(env).catch(() => undefined);
      for (let round = 0; round < 50 && queued.length; round++) {
        const batch = queued.splice(0, 10);
        const result = await consume(WEBHOOK_QUEUE, batch);
        for (const retry of result.retryMessages) {
          const message = batch[Number(retry.msgId.slice(1))]!;
          if (message.attempts < ATTEMPTS) queued.push({ ...message, attempts: message.attempts + 1 });
          else givenUp++;
        }
      }
      for (const a of agencies) {
        const arrived = a.inbox.splice(0);
        for (const e of arrived) if (rand() < 0.1) arrived.push(e);
        for (let i = arrived.length - 1; i > 0; i--) {
          const j = Math.floor(rand() * (i + 1));
          [arrived[i], arrived[j]] = [arrived[j]!, arrived[i]!];
        }
        for (const e of arrived) {
          await a.mirror.receive(e);
          await a.blind.receive(e);
        }
        // Whatever arrived, in any order and with any loss, the mirror has no hole below it.
        const highest = Math.max(0, ...arrived.map((e) => e.sequence ?? 0));
        expect(a.mirror.ahead, "sequences accounted for past a hole").toEqual([]);
        expect(a.mirror.through).toBeGreaterThanOrEqual(highest);
      }
    }

    // The first copies, from the list routes, at the feed's head.
    const startedAt = new Map<Agency, number>();
    for (const a of agencies) {
      await a.mirror.start();
      await a.blind.start();
      startedAt.set(a, a.mirror.through);
    }
    // Every agency loses at least one delivery.
    for (const a of agencies) await drop(a, 1);

    for (let step = 0; step < STEPS; step++) {
      for (const a of agencies) await change(a, step);
      if (step % ROUND === ROUND - 1) await deliver();
    }
    await deliver();
    // Once every delivery has had its chance: fill what is still missing, and sweep the tours.
    for (const a of agencies) {
      await a.mirror.fill();
      await a.mirror.sweepTours();
    }
    await settle();

    let blindLost = 0;
    for (const a of agencies) {
      const fresh = await freshReads(a.t);
      const { n, last } = await lastSequence(a.t.agencyId);
      expect(n, "the agency's sequence has a gap or a repeat").toBe(last);
      expect(a.mirror.through).toBe(last);
      expect(a.mirror.ahead).toEqual([]);
      const start = startedAt.get(a)!;
      const accounted = new Set([...a.accounted, ...Array.from({ length: start }, (_, i) => i + 1)]);
      expect([...accounted].sort((x, y) => x - y)).toEqual(Array.from({ length: last }, (_, i) => i + 1));
      const copy = copyOf(a.mirror);
      expect(copy.listings).toBe(fresh.listings);
      expect(copy.users).toBe(fresh.users);
      expect(copy.orders).toBe(fresh.orders);
      expect(copy.tours).toBe(fresh.tours);
      expect(a.mirror.stats.fills, "the mirror never had to fill a gap").toBeGreaterThan(1);
      expect(a.mirror.stats.skipped, "no delivery was found stale by its version").toBeGreaterThan(0);

      // The same deliveries without filling: a copy that shows the loss the test injected.
      await a.blind.sweepTours();
      const blind = copyOf(a.blind);
      const unequal = (Object.keys(fresh) as (keyof typeof fresh)[]).some((k) => blind[k] !== fresh[k]);
      if (unequal || a.blind.through < last || a.blind.ahead.length > 0) blindLost++;
    }
    expect(blindLost, "no agency's copy lost anything without the feed").toBeGreaterThan(0);

    // A copy that starts after the first events are gone from the 30-day window: the feed
    // answers 410, the mirror resyncs from the list routes and goes on from there.
    const [first] = agencies;
    const gone = await db()
      .select({ id: events.id })
      .from(events)
      .where(and(eq(events.agencyId, first!.t.agencyId), lte(events.sequence, 5)))
      .all();
    const goneIds = gone.map((e) => e.id);
    const deliveriesGone = db()
      .select({ id: webhookDeliveries.id })
      .from(webhookDeliveries)
      .where(inArray(webhookDeliveries.eventId, goneIds));
    await db().batch([
      db().delete(webhookDeliveryAttempts).where(inArray(webhookDeliveryAttempts.deliveryId, deliveriesGone)),
      db().delete(webhookDeliveries).where(inArray(webhookDeliveries.eventId, goneIds)),
      db().delete(events).where(inArray(events.id, goneIds)),
    ]);
    const late = createMirror({ baseUrl: BASE, apiKey: first!.mirrorKey, fetch: selfFetch });
    await late.fill();
    expect(late.stats.resyncs, "the expired feed made the mirror resync").toBe(1);
    expect(late.through).toBe((await lastSequence(first!.t.agencyId)).last);
    expect(copyOf(late)).toEqual(await freshReads(first!.t));
    expect(unverified, "deliveries whose signature did not verify").toBe(0);
    // Shuffled deliveries jump ahead often, so the feed brings most events first; deliveries still bring some.
    expect(viaWebhooks, "events the mirrors took from deliveries").toBeGreaterThan(AGENCIES);
    expect(dropsAsked).toBeGreaterThan(AGENCIES);
    expect(receiverDown + refusedSends).toBeGreaterThan(0);
    // The only error logs are the refused sends' failed drains.
    for (const entry of logs) expect(entry.message, JSON.stringify(entry)).toMatch(/outbox drain failed/);
    console.log(
      `mirror model (seed ${FUZZ_SEED}): ${refusedSends} sends refused, ${receiverDown} receiver errors, ` +
        `${givenUp} deliveries given up, ${dropsAsked} drops asked; ` +
        agencies.map((a) => `through ${a.mirror.through} (${a.mirror.stats.fills} fills)`).join(", "),
    );
  }, 300_000);
});
