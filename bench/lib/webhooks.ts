// The webhook pipeline, end to end: listings created through the public API at a steady
// rate, each `listing.created` timed from the moment its create was sent to its receipt
// at a tiny receiver on loopback, once per registered endpoint.
import { randomBytes } from "node:crypto";
import { createServer, type Server } from "node:http";
import { performance } from "node:perf_hooks";
import type { Api, BenchKey } from "./api.ts";
import { cpuSoFar, type Figure } from "./load.ts";
import { logSince, logSize, sleep } from "./processes.ts";

const MAX_BODY_BYTES = 256 * 1024;
/** How long receipts are awaited after the last create: past one Cron tick. */
const SETTLE_MS = 75_000;
const CRON_EVERY_MS = 60_000;

/** One loopback receiver for every endpoint of the run; paths tell endpoints apart. */
export class Receiver {
  readonly server: Server;
  port = 0;
  /** `${path} ${listing_number}` → first receipt time. */
  readonly firsts = new Map<string, number>();
  /** Receipts beyond the first, by path (delivery is at-least-once). */
  readonly duplicates = new Map<string, number>();
  malformed = 0;

  constructor() {
    this.server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      let size = 0;
      req.on("data", (chunk: Buffer) => {
        size += chunk.length;
        if (size <= MAX_BODY_BYTES) chunks.push(chunk);
      });
      req.on("end", () => {
        const at = performance.now();
        res.writeHead(200, { "Content-Type": "text/plain" }).end("ok");
        try {
          const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
          const number = body?.data?.listing_number;
          if (body?.event_type !== "listing.created" || typeof number !== "string") return;
          const id = `${req.url} ${number}`;
          if (this.firsts.has(id)) this.duplicates.set(req.url!, (this.duplicates.get(req.url!) ?? 0) + 1);
          else this.firsts.set(id, at);
        } catch {
          this.malformed++;
        }
      });
    });
    this.server.keepAliveTimeout = 5_000;
    this.server.requestTimeout = 15_000;
  }

  async listen(): Promise<void> {
    this.port = await listenOnLoopback(this.server);
  }

  close(): Promise<void> {
    return closeServer(this.server);
  }
}

/** Listens on a free loopback port; answers the port. */
export function listenOnLoopback(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const address = server.address();
      resolve(typeof address === "object" && address ? address.port : 0);
    });
  });
}

/** Closes a server and every connection it holds. */
export function closeServer(server: Server): Promise<void> {
  server.closeAllConnections();
  return new Promise((resolve) => server.close(() => resolve()));
}

export const percentile = (sorted: number[], p: number) =>
  sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : Number.NaN;

export interface PipelineRun extends Figure {
  expected: number;
  /** Deliveries a second the run offered: creates a second × endpoints. */
  offered: number;
  received: number;
  duplicates: number;
  createFailures: number;
  settleSeconds: number;
  /** How long the creates took to answer. */
  create: { p50: number; p99: number };
  /** From a create's answer (the change committed) to its receipt. */
  afterAnswer: { p50: number; p99: number };
  /**
   * Send to receipt of the creates sent in each third of the run, in order: a lag that grows
   * from third to third is a backlog (deliveries leave slower than creates arrive), a flat
   * one with a high p99 is not.
   */
  thirds: { p50: number; p99: number }[];
  /** The webhook queue's consumer batches during the run, from the local broker's log (absent without a log). */
  batches?: QueueBatches;
  /**
   * The workerd that runs the Worker, from the first create to the last receipt: its CPU
   * milliseconds per receipt (the create, the fan-out and the delivery together), and the
   * share of that time its one thread was busy. Locally that thread also runs D1, the
   * Durable Objects and the queue broker, so a share near 1 leaves the consumer no room to
   * catch up after a pause (absent where /proc is not readable).
   */
  thread?: { msPerReceipt: number; busy: number };
}

/**
 * The local broker hands the consumer one batch at a time, each only once the one before
 * it has returned, and logs each batch's size and duration. `busy` is the share of the run
 * spent inside a batch; `capacity` the deliveries a second that pace allows (messages per
 * second of batch time). A capacity near or below the deliveries offered is a backlog that
 * grows for the rest of the run, whatever the receivers do.
 */
interface QueueBatches {
  count: number;
  messages: number;
  meanMs: number;
  p50Ms: number;
  p99Ms: number;
  busy: number;
  capacity: number;
}

const BATCH_LINE = /QUEUE alms-webhooks-[a-z]+ (\d+)\/(\d+) \((\d+)ms\)/g;

/** The consumer batches the broker logged in `text`, over a run of `seconds`. */
function queueBatches(text: string, seconds: number): QueueBatches | undefined {
  const times: number[] = [];
  let messages = 0;
  for (const m of text.matchAll(BATCH_LINE)) {
    messages += Number(m[2]);
    times.push(Number(m[3]));
  }
  if (!times.length) return undefined;
  times.sort((a, b) => a - b);
  const total = times.reduce((n, t) => n + t, 0);
  return {
    count: times.length,
    messages,
    meanMs: total / times.length,
    p50Ms: percentile(times, 50),
    p99Ms: percentile(times, 99),
    busy: total / 1000 / Math.max(0.001, seconds),
    capacity: messages / Math.max(0.001, total / 1000),
  };
}

/**
 * Registers `endpoints` receivers for the agency, creates `rate` listings a second for
 * `seconds`, and waits (at most SETTLE_MS after the last create, with the every-minute
 * Cron fired as the platform would) for every receipt. A receipt that never came counts
 * as infinitely late in p50/p99.
 */
export async function measurePipeline(
  api: Api,
  receiver: Receiver,
  tenant: { key: BenchKey; ownerId: string },
  endpoints: number,
  rate: number,
  seconds: number,
  productLog?: string,
): Promise<PipelineRun> {
  const name = `webhook listing.created → receiver, ${endpoints} endpoint${endpoints === 1 ? "" : "s"}`;
  process.stderr.write(`· ${name}\n`);
  const tag = randomBytes(6).toString("hex");
  const paths: string[] = [];
  for (let i = 0; i < endpoints; i++) {
    const path = `/hook/${tag}/${i}`;
    await api.expect(201, "/api/v1/webhooks/endpoints", tenant.key.secret, {
      body: { url: `http://127.0.0.1:${receiver.port}${path}`, event_types: ["listing.created"] },
    });
    paths.push(path);
  }
  // Whatever earlier phases left in the outbox goes out first, so this run times its own events.
  await api.cronTick();

  const logFrom = productLog ? logSize(productLog) : 0;
  const cpuFrom = cpuSoFar(api.origin);
  const total = Math.max(1, Math.round(rate * seconds));
  const sent = new Map<string, number>();
  const answered = new Map<string, number>();
  let createFailures = 0;
  const creates: Promise<void>[] = [];
  const started = performance.now();
  let lastCron = Date.now();
  for (let i = 0; i < total; i++) {
    const due = started + (i * 1000) / rate;
    const wait = due - performance.now();
    if (wait > 0) await sleep(wait);
    const number = randomBytes(8).readBigUInt64BE().toString(36).padStart(7, "0").slice(-7);
    sent.set(number, performance.now());
    creates.push(
      api
        .public("/api/v1/listings", tenant.key.secret, {
          body: {
            address: `${1 + i} Pipeline Street`,
            owner_user_id: tenant.ownerId,
            agent_one_id: tenant.ownerId,
            listing_number: number,
          },
        })
        .then(
          (r) => {
            answered.set(number, performance.now());
            if (r.status !== 201) {
              createFailures++;
              sent.delete(number);
            }
          },
          () => {
            createFailures++;
            sent.delete(number);
          },
        ),
    );
  }
  await Promise.all(creates);
  const expected = sent.size * endpoints;
  const done = () => {
    let n = 0;
    for (const path of paths) for (const number of sent.keys()) if (receiver.firsts.has(`${path} ${number}`)) n++;
    return n;
  };
  const settleStart = Date.now();
  while (done() < expected && Date.now() - settleStart < SETTLE_MS) {
    if (Date.now() - lastCron >= CRON_EVERY_MS) {
      lastCron = Date.now();
      await api.cronTick().catch(() => undefined);
    }
    await sleep(100);
  }
  const settleSeconds = (Date.now() - settleStart) / 1000;
  const cpuTo = cpuSoFar(api.origin);
  const cpuSeconds = (performance.now() - started) / 1000;

  const latencies: number[] = [];
  const afterAnswer: number[] = [];
  let lastReceipt = started;
  for (const path of paths) {
    for (const [number, at] of sent) {
      const receipt = receiver.firsts.get(`${path} ${number}`);
      latencies.push(receipt === undefined ? Number.POSITIVE_INFINITY : receipt - at);
      afterAnswer.push(receipt === undefined ? Number.POSITIVE_INFINITY : receipt - answered.get(number)!);
      if (receipt !== undefined && receipt > lastReceipt) lastReceipt = receipt;
    }
  }
  const thirds = [0, 1, 2].map((third) => {
    const from = started + (third * seconds * 1000) / 3;
    const to = started + ((third + 1) * seconds * 1000) / 3;
    const lags: number[] = [];
    for (const path of paths)
      for (const [number, at] of sent) {
        if (at < from || at >= to) continue;
        const receipt = receiver.firsts.get(`${path} ${number}`);
        lags.push(receipt === undefined ? Number.POSITIVE_INFINITY : receipt - at);
      }
    lags.sort((a, b) => a - b);
    return { p50: percentile(lags, 50), p99: percentile(lags, 99) };
  });
  const createTimes = [...sent].map(([number, at]) => answered.get(number)! - at);
  for (const list of [latencies, afterAnswer, createTimes]) list.sort((a, b) => a - b);
  const received = latencies.filter(Number.isFinite).length;
  const duplicates = paths.reduce((n, path) => n + (receiver.duplicates.get(path) ?? 0), 0);
  const span = (lastReceipt - started) / 1000;
  const rps = received / Math.max(0.001, span);
  const batches = productLog ? queueBatches(logSince(productLog, logFrom), span) : undefined;
  const threadMs = cpuFrom && cpuTo ? cpuTo.workerd - cpuFrom.workerd : undefined;
  return {
    name,
    rps,
    p50: percentile(latencies, 50),
    p99: percentile(latencies, 99),
    unexpected: expected - received + createFailures,
    statuses: {},
    expected,
    offered: rate * endpoints,
    received,
    duplicates,
    createFailures,
    settleSeconds,
    create: { p50: percentile(createTimes, 50), p99: percentile(createTimes, 99) },
    afterAnswer: { p50: percentile(afterAnswer, 50), p99: percentile(afterAnswer, 99) },
    thirds,
    ...(batches && { batches }),
    ...(threadMs !== undefined &&
      received && {
        thread: { msPerReceipt: threadMs / received, busy: threadMs / 1000 / cpuSeconds },
      }),
  };
}
