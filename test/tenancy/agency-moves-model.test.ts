import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { copyStatement, mutedBatch, purgeStatement, readPage } from "../../src/db/move-rows";
import { MOVED_TABLES } from "../../src/db/moved-tables";
import { type ShardName, shardD1 } from "../../src/db/shards";
import { call, internal, makeTenant, type Tenant, unique } from "../support/harness";
import { finished, rowsOn, startMove, writeThrough } from "../support/moves";
import { random } from "../support/random";
import {
  consume,
  cron,
  interceptWebhooks,
  type Receivers,
  registerEndpoint,
  WEBHOOK_QUEUE,
} from "../support/webhook-harness";

interface Agency {
  t: Tenant;
  shard: ShardName;
  /** listing_number → address, as the model expects them. */
  listings: Map<string, string>;
  /** Idempotency key → the request and its first answer. */
  answers: Map<string, { body: unknown; status: number; json: unknown }>;
  move?: Promise<unknown>;
}

const other = (s: ShardName): ShardName => (s === "shard-1" ? "shard-2" : "shard-1");

/** Creates a listing with a fresh idempotency key (a write that may meet a switch is retried with its key). */
async function create(a: Agency, rand: () => number) {
  const idem = unique("idem");
  const body = {
    address: `${Math.floor(rand() * 1e6)} ${unique("addr")}`,
    owner_user_id: a.t.owner.id,
    agent_one_id: a.t.agent.id,
  };
  const { r } = await writeThrough("/api/v1/listings", { key: a.t.key, body, idem });
  expect(r.status, r.text).toBe(201);
  a.listings.set(r.json.listing_number, body.address);
  a.answers.set(idem, { body, status: r.status, json: r.json });
}

/** Retries an earlier request with its key and body: the answer must be the first one, exactly. */
async function retry(a: Agency, rand: () => number, problems: string[]) {
  const keys = [...a.answers.keys()];
  if (!keys.length) return;
  const idem = keys[Math.floor(rand() * keys.length)]!;
  const first = a.answers.get(idem)!;
  const { r } = await writeThrough("/api/v1/listings", { key: a.t.key, body: first.body, idem });
  if (r.status !== first.status || JSON.stringify(r.json) !== JSON.stringify(first.json))
    problems.push(`${a.t.agencyId}: retry of ${idem} answered ${r.status} ${r.text}`);
}

/** Moves an agency to its other shard through the internal API; the move runs while the model goes on. */
function move(a: Agency) {
  const to = other(a.shard);
  a.move = startMove(a.t.agencyId, to).then(async (m) => {
    const done = await finished(m.move_id);
    expect(done.status, JSON.stringify(done)).toBe("done");
    a.shard = to;
  });
}

/** Everything that must hold at the end, as a list of what does not. */
async function check(agencies: Agency[], receivers: Receivers): Promise<string[]> {
  const problems: string[] = [];
  for (const a of agencies) {
    const id = a.t.agencyId;
    const placed = (await internal(`/internal/v1/agencies/${id}`)).json.shard;
    if (placed !== a.shard) problems.push(`${id}: on ${placed}, expected ${a.shard}`);
    const left = await rowsOn(other(a.shard), id);
    if (Object.keys(left).length) problems.push(`${id}: rows left on ${other(a.shard)}: ${JSON.stringify(left)}`);
    const listed = await call("/api/v1/listings?limit=100", { key: a.t.key });
    const seen = new Map<string, string>(listed.json.data.map((l: any) => [l.listing_number, l.address]));
    if (JSON.stringify([...seen].sort()) !== JSON.stringify([...a.listings].sort()))
      problems.push(`${id}: listings ${JSON.stringify([...seen])} ≠ model ${JSON.stringify([...a.listings])}`);
    const db = shardD1(env, a.shard);
    const { results: seqs } = await db
      .prepare("SELECT sequence FROM events WHERE agency_id = ?1 ORDER BY sequence")
      .bind(id)
      .all<{ sequence: number }>();
    if (seqs.some((e, i) => e.sequence !== i + 1)) problems.push(`${id}: sequences ${seqs.map((e) => e.sequence)}`);
    const { results: deliveries } = await db
      .prepare(
        `SELECT e.id AS eventId, count(d.id) AS n FROM events e LEFT JOIN webhook_deliveries d ON d.event_id = e.id
         WHERE e.agency_id = ?1 AND e.event_type = 'listing.created' GROUP BY e.id`,
      )
      .bind(id)
      .all<{ eventId: string; n: number }>();
    const wrong = deliveries.filter((d) => d.n !== 1);
    if (wrong.length || deliveries.length !== a.listings.size)
      problems.push(`${id}: deliveries per event ${JSON.stringify(wrong)} of ${deliveries.length}`);
    const received = new Set(receivers.received.map((r) => JSON.parse(r.body).event_id));
    const missing = deliveries.filter((d) => !received.has(d.eventId));
    if (missing.length) problems.push(`${id}: ${missing.length} events never reached the receiver`);
  }
  return problems;
}

/** Drains every shard's outbox and runs the consumer over what was sent, some messages twice, until nothing new. */
async function deliverAll(receivers: Receivers, rand: () => number) {
  for (let round = 0; round < 20; round++) {
    await cron("* * * * *");
    const sent = receivers.sent.splice(0);
    if (!sent.length) return;
    const twice = sent.filter(() => rand() < 0.2);
    await consume(WEBHOOK_QUEUE, [...sent, ...twice]);
  }
}

/**
 * A move that copies the rows once and flips the map, with no journal and no fence: the
 * negative control, which the checks must catch losing a write made during its copy.
 */
async function naiveMove(a: Agency, duringCopy: () => Promise<void>) {
  const from = shardD1(env, a.shard);
  const to = shardD1(env, other(a.shard));
  for (const t of MOVED_TABLES) {
    for (let cursor = null as any; ; ) {
      const page = await readPage(from, t, a.t.agencyId, cursor, 100);
      if (page.rows.length)
        await mutedBatch(
          to,
          page.rows.map((row) => copyStatement(to, t, row)),
        );
      if (page.rows.length < 100) break;
      cursor = page.next;
    }
    if (t.name === "listings") await duringCopy();
  }
  await env.DB.prepare("UPDATE agency_shards SET shard = ?1 WHERE agency_id = ?2")
    .bind(other(a.shard), a.t.agencyId)
    .run();
  await env.KEY_GATE.getByName(a.t.keyId).moveTo(other(a.shard));
  for (const t of [...MOVED_TABLES].reverse())
    for (;;) {
      const [, gone] = await mutedBatch(from, [purgeStatement(from, t, a.t.agencyId, 100)]);
      if (!gone?.results.length) break;
    }
  a.shard = other(a.shard);
}

async function agencies(): Promise<Agency[]> {
  const made: Agency[] = [];
  for (const shard of ["shard-1", "shard-1", "shard-2"] as const) {
    const t = await makeTenant({ shard });
    await registerEndpoint(t, `https://hooks.example.test/${t.agencyId}`, ["listing.created"]);
    made.push({ t, shard, listings: new Map(), answers: new Map() });
  }
  return made;
}

describe("agencies moved at random while they write, retry and receive webhooks", () => {
  let receivers: Receivers;
  beforeEach(() => {
    receivers = interceptWebhooks();
  });
  afterEach(() => vi.restoreAllMocks());

  for (const seed of [11, 29]) {
    it(`end with every write once, gapless sequences, the same replays and nothing left behind (seed ${seed})`, async () => {
      const rand = random(seed);
      const all = await agencies();
      const problems: string[] = [];
      for (let step = 0; step < 60; step++) {
        const a = all[Math.floor(rand() * all.length)]!;
        const roll = rand();
        if (roll < 0.55) await create(a, rand);
        else if (roll < 0.8) await retry(a, rand, problems);
        else if (roll < 0.9 && !a.move) move(a);
        else if (rand() < 0.5) await deliverAll(receivers, rand);
        for (const b of all)
          if (b.move && (await Promise.race([b.move.then(() => true), Promise.resolve(false)]))) b.move = undefined;
      }
      await Promise.all(all.map((a) => a.move));
      await deliverAll(receivers, rand);
      problems.push(...(await check(all, receivers)));
      expect(problems).toEqual([]);
    });
  }

  it("catch a move that copies without its journal (the negative control)", async () => {
    const rand = random(7);
    const [a] = await agencies();
    for (let i = 0; i < 3; i++) await create(a!, rand);
    await naiveMove(a!, () => create(a!, rand));
    await deliverAll(receivers, rand);
    const problems = await check([a!], receivers);
    expect(problems.join("\n")).toMatch(/listings .* ≠ model/);
  });
});
