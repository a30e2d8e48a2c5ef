// A replay of many events to one endpoint, and what it does to that endpoint's live
// deliveries: an agency writes REPLAY_EVENTS listings, a receiver is registered after them,
// then live creates run at a steady rate twice, once alone and once while a replay of every
// event is under way. Figures: the replay's time from its start to its last receipt, and the
// live deliveries' p50/p99 from send to receipt, before and during.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { performance } from "node:perf_hooks";
import type { Api, BenchKey } from "./api.ts";
import { sleep } from "./processes.ts";
import { type Verdict, verdict } from "./report.ts";
import { closeServer, listenOnLoopback, percentile } from "./webhooks.ts";

const REPLAY_EVENTS = Number(process.env.BENCH_REPLAY_EVENTS ?? 10_000);
/** Creates in flight while the agency's history is written. */
const WRITERS = 16;
const LIVE_RATE = 10;
const LIVE_SECONDS = 15;
/** A replay not done by then is reported as unfinished. */
const REPLAY_TIMEOUT_MS = 600_000;
const SETTLE_MS = 30_000;

interface Receipt {
  at: number;
  replay: boolean;
}

/** A loopback receiver answering 200 at once; each receipt by listing number. */
class ReplayReceiver {
  readonly server: Server;
  port = 0;
  readonly receipts = new Map<string, Receipt[]>();
  replayed = 0;
  lastReplayAt = 0;

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on("data", (chunk: Buffer) => chunks.push(chunk));
      req.on("end", () => {
        const at = performance.now();
        res.writeHead(200).end("ok");
        const replay = req.headers["x-webhook-replay"] !== undefined;
        if (replay) {
          this.replayed++;
          this.lastReplayAt = at;
        }
        try {
          const number = JSON.parse(Buffer.concat(chunks).toString("utf8"))?.data?.listing_number;
          if (typeof number === "string")
            this.receipts.set(number, [...(this.receipts.get(number) ?? []), { at, replay }]);
        } catch {
          // Not an envelope: not counted.
        }
      });
    });
  }

  async listen(): Promise<void> {
    this.port = await listenOnLoopback(this.server);
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }
}

const listingNumber = () => randomBytes(8).readBigUInt64BE().toString(36).padStart(7, "0").slice(-7);

interface Tenant {
  key: BenchKey;
  ownerId: string;
}

const create = (api: Api, tenant: Tenant, number: string) =>
  api.public("/api/v1/listings", tenant.key.secret, {
    body: {
      address: `${number} Replay Street`,
      owner_user_id: tenant.ownerId,
      agent_one_id: tenant.ownerId,
      listing_number: number,
    },
  });

/** Writes `n` listings, WRITERS at a time; answers how many failed. */
async function history(api: Api, tenant: Tenant, n: number): Promise<number> {
  let next = 0;
  let failed = 0;
  const writer = async () => {
    while (next < n) {
      next++;
      const r = await create(api, tenant, listingNumber()).catch(() => undefined);
      if (r?.status !== 201) failed++;
    }
  };
  await Promise.all(Array.from({ length: WRITERS }, writer));
  return failed;
}

interface LiveFigures {
  sent: number;
  received: number;
  p50: number;
  p99: number;
}

/**
 * Live creates at LIVE_RATE a second for LIVE_SECONDS (or until `until()` says stop),
 * each timed from its send to its first live receipt; a receipt that never came is lost.
 */
async function live(api: Api, tenant: Tenant, receiver: ReplayReceiver, until: () => boolean): Promise<LiveFigures> {
  const sent = new Map<string, number>();
  const creates: Promise<unknown>[] = [];
  const started = performance.now();
  for (let i = 0; i < LIVE_RATE * LIVE_SECONDS && !until(); i++) {
    const wait = started + (i * 1000) / LIVE_RATE - performance.now();
    if (wait > 0) await sleep(wait);
    const number = listingNumber();
    sent.set(number, performance.now());
    creates.push(create(api, tenant, number).catch(() => undefined));
  }
  await Promise.all(creates);
  const firstLive = (number: string) => receiver.receipts.get(number)?.find((r) => !r.replay)?.at;
  const settle = Date.now();
  while ([...sent.keys()].some((n) => firstLive(n) === undefined) && Date.now() - settle < SETTLE_MS) await sleep(100);
  const latencies = [...sent].map(([n, at]) => (firstLive(n) ?? Number.POSITIVE_INFINITY) - at).sort((a, b) => a - b);
  return {
    sent: sent.size,
    received: latencies.filter(Number.isFinite).length,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
  };
}

export interface ReplayRun {
  events: number;
  writeFailures: number;
  /** From the replay's start to its last receipt, and the replay's own figures when it ended. */
  seconds: number;
  total: number;
  sent: number;
  received: number;
  done: boolean;
  before: LiveFigures;
  during: LiveFigures;
}

/** The replay phase: history, a receiver registered after it, live alone, then live beside a replay of everything. */
export async function measureReplay(api: Api, tenant: Tenant): Promise<ReplayRun> {
  process.stderr.write(`· replay of ${REPLAY_EVENTS} events beside live deliveries\n`);
  const receiver = new ReplayReceiver();
  await receiver.listen();
  try {
    const writeFailures = await history(api, tenant, REPLAY_EVENTS);
    // The history's events leave the outbox before the receiver exists: it gets them only by the replay.
    await api.cronTick();
    const endpoint = await api.expect(201, "/api/v1/webhooks/endpoints", tenant.key.secret, {
      body: { url: `http://127.0.0.1:${receiver.port}/replay`, event_types: ["listing.created"] },
    });
    const before = await live(api, tenant, receiver, () => false);
    const path = `/api/v1/webhooks/endpoints/${endpoint.id}/replays`;
    const started = performance.now();
    const replay = await api.expect(202, path, tenant.key.secret, { body: { after_sequence: 0 } });
    let state = replay;
    const follow = (async () => {
      while (state.status === "running" && performance.now() - started < REPLAY_TIMEOUT_MS) {
        // Once a second: the key's read_webhook_endpoints budget is 120 a minute.
        await sleep(1000);
        state = await api.expect(200, `${path}/${replay.replay_id}`, tenant.key.secret);
      }
    })();
    const during = await live(api, tenant, receiver, () => state.status !== "running");
    await follow;
    const settle = Date.now();
    while (receiver.replayed < state.events_sent && Date.now() - settle < SETTLE_MS) await sleep(100);
    return {
      events: REPLAY_EVENTS,
      writeFailures,
      seconds: (receiver.lastReplayAt - started) / 1000,
      total: state.events_total,
      sent: state.events_sent,
      received: receiver.replayed,
      done: state.status === "done",
      before,
      during,
    };
  } finally {
    await receiver.close();
  }
}

const ms = (v: number) => (Number.isFinite(v) ? `${v.toFixed(0)} ms` : "lost");

export function printReplay(r: ReplayRun) {
  console.log(
    `\nReplay: ${r.received}/${r.total} events received in ${r.seconds.toFixed(1)} s ` +
      `(${(r.received / Math.max(0.001, r.seconds)).toFixed(0)} events/s), replay ${r.done ? "done" : "NOT done"}, ` +
      `${r.writeFailures} failed history write(s).` +
      `\n  live deliveries to the same endpoint (${LIVE_RATE} creates/s): alone p50 ${ms(r.before.p50)} / p99 ` +
      `${ms(r.before.p99)} (${r.before.received}/${r.before.sent}); during the replay p50 ${ms(r.during.p50)} / p99 ` +
      `${ms(r.during.p99)} (${r.during.received}/${r.during.sent}).`,
  );
}

/** The goal: every event replayed, and live deliveries' p99 during the replay within 2× their p99 alone. */
export function replayVerdict(r: ReplayRun): Verdict {
  const ratio = r.during.p99 / r.before.p99;
  return verdict(
    r.done && r.received >= r.total && ratio <= 2,
    `${r.received}/${r.total} replayed in ${r.seconds.toFixed(1)} s; live p99 ${ratio.toFixed(2)}× alone (≤ 2)`,
  );
}
