// npm run bench: a repeatable load run on loopback. It seeds a fresh local state (two
// agencies of listings and tours, through SQL files), starts the baseline Worker and the
// product Worker (bench/lib/workers.ts: wrangler's dev server without an inspector, or
// `wrangler dev` with BENCH_RUNNER=wrangler), and measures with autocannon: the bare route, each
// product route against its floor (the same primitives with no product code), many
// tenants at once, what the event sequence costs the POST (with against without), what
// observability costs (on against off), the list routes at a small and a big agency,
// the webhook pipeline from a change to its receipt, and the Worker's bundle size and
// cold start. It prints one table and the goals judged from it; a
// missed goal is reported, not a failure (exit 1 only when the bench itself broke).
//
// Shorter runs for development: BENCH_SECONDS (per row, default 10), BENCH_WARMUP (3),
// BENCH_ROWS (rows of the big agency, default 100000), BENCH_HOOK_SECONDS (15),
// BENCH_HOOK_RATE (20 creates/s), BENCH_HOOK_RUNS (5 runs in a row at 10 endpoints), BENCH_LAYERS=1 adds the
// guard-layer rows, BENCH_PHASES (a comma-separated
// list of core, tenants, post, sequence, observability, shards, growth, webhooks, replay, startup; every phase
// when unset) runs only those phases. BENCH_REPLAY_EVENTS (10000): the events the replay phase replays.
// BENCH_COLD_STARTS (3): fresh starts of each Worker in the startup phase. BENCH_OBS_REPEATS (3): fresh starts
// of the observability phase's Workers.
// BENCH_ROUNDS (3): the slices in which a route and its floor (or single key) are measured in turns.
// BENCH_PROFILE=<dir> writes a CPU and an allocation profile of each row's Worker and prints their heaviest functions.
// BENCH_RUNNER=wrangler serves the measured Workers with `wrangler dev` instead.

import { randomBytes, randomUUID } from "node:crypto";
import { cpus, loadavg, totalmem } from "node:os";
import { join } from "node:path";
import { applyLocalMigrations } from "../scripts/local-migrations.ts";
import { Api, type BenchKey } from "./lib/api.ts";
import { measureGrowth } from "./lib/growth.ts";
import { judgeRun } from "./lib/judge.ts";
import {
  CONNECTIONS,
  DURATION,
  type Figure,
  inspectorOf,
  LIST_CONNECTIONS,
  measure,
  measureAlternating,
  ROUNDS,
  WARMUP,
} from "./lib/load.ts";
import { measureObservability, observabilityStarts } from "./lib/observability.ts";
import { cleanupNow, errorLines, runChild, stateDir, stopChildren } from "./lib/processes.ts";
import { PROFILE_DIR, startProfile } from "./lib/profile.ts";
import { measureReplay, printReplay, type ReplayRun, replayVerdict } from "./lib/replay.ts";
import { printGoals, printTable, type Row, size } from "./lib/report.ts";
import { type GrowthAgency, generateAgency } from "./lib/seed.ts";
import { measureSequence } from "./lib/sequence.ts";
import { shardSpecs } from "./lib/shards.ts";
import {
  type BundleFile,
  type ColdStarts,
  judgeStartup,
  measureBundle,
  measureColdStarts,
  printStartup,
} from "./lib/startup.ts";
import { measurePipeline, type PipelineRun, Receiver } from "./lib/webhooks.ts";
import { RUNNER_NAME, serveWorker } from "./lib/workers.ts";

const BIG_ROWS = Number(process.env.BENCH_ROWS ?? 100_000);
const SMALL_ROWS = Math.min(1_000, Math.max(1, Math.round(BIG_ROWS / 10)));
const HOOK_SECONDS = Number(process.env.BENCH_HOOK_SECONDS ?? 15);
const HOOK_RATE = Number(process.env.BENCH_HOOK_RATE ?? 20);
/** Runs in a row at 10 endpoints; the goal holds only when every one meets it. */
const HOOK_RUNS = Math.max(1, Number(process.env.BENCH_HOOK_RUNS ?? 5));
const TENANT_AGENCIES = 8;
const KEYS_PER_AGENCY = 8;
const READY_TIMEOUT_MS = 180_000;
const COLD_STARTS = Number(process.env.BENCH_COLD_STARTS ?? 3);
const PHASES = [
  "core",
  "tenants",
  "post",
  "sequence",
  "observability",
  "shards",
  "growth",
  "webhooks",
  "replay",
  "startup",
] as const;
const chosen = (process.env.BENCH_PHASES ?? "")
  .split(",")
  .map((p) => p.trim())
  .filter(Boolean);
for (const p of chosen)
  if (!(PHASES as readonly string[]).includes(p)) throw new Error(`BENCH_PHASES: unknown phase ${p} (${PHASES})`);
/** Whether the run includes this phase: every phase unless BENCH_PHASES names some. */
const runs = (p: (typeof PHASES)[number]) => !chosen.length || chosen.includes(p);
/** Only the core and POST phases load the baseline Worker. */
const needsBaseline = runs("core") || runs("post");

/** Set once a signal or the end of the run stops the bench. */
let stopping = false;

async function main() {
  const began = Date.now();
  const loadAtStart = loadavg();
  const operatorToken = randomBytes(18).toString("base64url");
  const runId = randomBytes(4).toString("hex");
  const persist = ["--persist-to", stateDir];

  process.stderr.write(
    runs("growth")
      ? `· migrations and seed (${size(SMALL_ROWS)} and ${size(BIG_ROWS)} rows) in ${stateDir}\n`
      : `· migrations in ${stateDir}\n`,
  );
  await applyLocalMigrations(stateDir);
  const growth: GrowthAgency[] = [];
  for (const [rows, seed] of runs("growth")
    ? ([
        [SMALL_ROWS, 1],
        [BIG_ROWS, 2],
      ] as const)
    : []) {
    const { agency, files } = generateAgency(stateDir, size(rows), rows, runId, seed);
    for (const file of files) {
      await runChild("wrangler", ["d1", "execute", "DB", "--local", ...persist, "--file", file], "seed", 600_000);
    }
    growth.push(agency);
  }

  // One after the other: two of wrangler's dev servers starting at once in one process tree can stall.
  const baseline =
    needsBaseline &&
    (await serveWorker({
      config: "bench/baseline/wrangler.jsonc",
      persist: join(stateDir, "baseline"),
      vars: {},
      logName: "baseline",
      readyPath: "/bare",
      readyMs: READY_TIMEOUT_MS,
    }));
  const product = await serveWorker({
    persist: stateDir,
    vars: {
      OPERATOR_TOKEN: operatorToken,
      SECRET_KEY: randomBytes(32).toString("base64url"),
      ALLOW_HTTP_RECEIVERS: "true",
    },
    logName: "product",
    readyPath: "/api/v1/openapi.json",
    readyMs: READY_TIMEOUT_MS,
  });
  const baseOrigin = baseline ? baseline.origin : "";
  const appOrigin = product.origin;
  if (needsBaseline) {
    const setup = await fetch(`${baseOrigin}/setup`, { method: "POST", signal: AbortSignal.timeout(30_000) });
    if (!setup.ok) throw new Error(`baseline setup answered ${setup.status}`);
  }

  const api = new Api(appOrigin, operatorToken);
  const agency = await api.agency("Bench Agency");
  const owner = await api.user(agency.id, "media_agency", "Bench Owner");
  const getKey = await api.key(agency.id, owner.id);
  const postKey = await api.key(agency.id, owner.id);

  const broken: string[] = [];
  const phase = async (name: string, fn: () => Promise<void>, only = true) => {
    if (stopping || !only) return;
    try {
      await fn();
    } catch (err) {
      if (stopping) return;
      broken.push(`${name}: ${err instanceof Error ? err.message : String(err)}`);
      process.stderr.write(`! ${name} broke: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  };

  // Core rows: the bare route, the two primitives, the floors and the product routes.
  const figures = new Map<string, Figure>();
  /** Lines printed under the table. */
  const notes: string[] = [];
  const keep = (id: string, f: Figure) => {
    figures.set(id, f);
    return f;
  };
  const userPath = `/api/v1/users/${owner.id}`;
  const singleKeyGet = { url: `${appOrigin}${userPath}`, headers: { "X-API-Key": getKey.secret } };
  await phase(
    "core routes",
    async () => {
      // The bare route and the same route writing one log line, in turns: what a line costs.
      const [bare, bareLogged] = await measureAlternating([
        { name: "bare route (baseline Worker)", opts: { url: `${baseOrigin}/bare` } },
        { name: "bare route + one wide-event-shaped log line (baseline)", opts: { url: `${baseOrigin}/bare/logged` } },
      ]);
      keep("bare", bare!);
      keep("bareLogged", bareLogged!);
      keep("do", await measure("bare route + one Durable Object RPC (baseline)", { url: `${baseOrigin}/do` }));
      keep("d1", await measure("bare route + one D1 read (baseline)", { url: `${baseOrigin}/d1` }));
      keep(
        "401",
        await measure(
          "unauthenticated request, 401 expected (product)",
          { url: `${appOrigin}/api/v1/users` },
          { expect: 401 },
        ),
      );
      // The product route and its floor in turns, so a drift of the machine falls on both.
      // With the floor writing one log line too: what a line costs a request that waited on I/O.
      const [floorGet, floorGetLogged, get] = await measureAlternating([
        { name: "floor GET: gate DO RPC, then D1 read (baseline)", opts: { url: `${baseOrigin}/floor/get` } },
        {
          name: "floor GET + one wide-event-shaped log line (baseline)",
          opts: { url: `${baseOrigin}/floor/get/logged` },
        },
        { name: "GET /api/v1/users/{id} (auth + rate limit + D1 read)", opts: singleKeyGet },
      ]);
      keep("floorGet", floorGet!);
      keep("floorGetLogged", floorGetLogged!);
      keep("get", get!);
    },
    runs("core"),
  );
  await phase(
    "many tenants",
    async () => {
      const tenants = await manyTenants(api);
      let next = 0;
      // Judged against the single key measured in turns with it, not against the core phase's run.
      const [single, many] = await measureAlternating([
        { name: "GET /api/v1/users/{id}, single key (in turns with many tenants)", opts: singleKeyGet },
        {
          name: `many tenants: ${tenants.length} keys over ${TENANT_AGENCIES} agencies`,
          opts: {
            url: appOrigin,
            requests: [
              {
                method: "GET",
                setupRequest: (req: any) => {
                  const t = tenants[next++ % tenants.length]!;
                  return {
                    ...req,
                    path: `/api/v1/users/${t.ownerId}`,
                    headers: { ...req.headers, "X-API-Key": t.secret },
                  };
                },
              },
            ],
          },
        },
      ]);
      keep("single", single!);
      keep("tenants", many!);
    },
    runs("tenants"),
  );
  await phase(
    "POST routes",
    async () => {
      const body = JSON.stringify({ address: "1 Bench Street", owner_user_id: owner.id, agent_one_id: owner.id });
      // The same create to both, each with a fresh idempotency key.
      const creates = (headers: Record<string, string>) => [
        {
          method: "POST",
          body,
          setupRequest: (req: any) => ({
            ...req,
            headers: {
              ...req.headers,
              ...headers,
              "Content-Type": "application/json",
              "X-Idempotency-Key": randomUUID(),
            },
          }),
        },
      ];
      const [floorPost, post] = await measureAlternating([
        {
          name: "floor POST: gate RPC, ledger DO write, D1 batch of 3 (baseline)",
          opts: { url: `${baseOrigin}/floor/post`, requests: creates({}) },
        },
        {
          name: "POST /api/v1/listings (auth + rate limit + idempotency + D1 batch)",
          opts: { url: `${appOrigin}/api/v1/listings`, requests: creates({ "X-API-Key": postKey.secret }) },
        },
      ]);
      keep("floorPost", floorPost!);
      keep("post", post!);
      // The creates' events leave the outbox before the next phase starts.
      await api.cronTick();
    },
    runs("post"),
  );
  await phase(
    "event sequence",
    async () => {
      const s = await measureSequence(operatorToken, READY_TIMEOUT_MS);
      keep("seqWith", s.with);
      keep("seqWithout", s.without);
    },
    runs("sequence"),
  );
  await phase(
    "observability",
    async () => {
      const o = await measureObservability(operatorToken, READY_TIMEOUT_MS);
      keep("obsGetOn", o.getOn);
      keep("obsGetSampled", o.getSampled);
      keep("obsGetOff", o.getOff);
      keep("obsPostOn", o.postOn);
      keep("obsPostSampled", o.postSampled);
      keep("obsPostOff", o.postOff);
      keep("obsGetAgain", o.getAgain);
      keep("obsPostAgain", o.postAgain);
      notes.push(...observabilityStarts(o.starts));
    },
    runs("observability"),
  );
  await phase(
    "shards",
    async () => {
      const [alone, far, near] = await measureAlternating(await shardSpecs(api, appOrigin));
      keep("shardAlone", alone!);
      keep("shardFar", far!);
      keep("shardNear", near!);
    },
    runs("shards"),
  );
  if (process.env.BENCH_LAYERS) await phase("guard layers", () => layers(api, appOrigin, agency.id, owner.id, figures));

  const growthRows: Row[] = [];
  await phase(
    "data growth",
    async () => {
      growthRows.push(...(await measureGrowth(api, growth, notes)));
    },
    runs("growth"),
  );

  const hooks: PipelineRun[] = [];
  await phase(
    "webhook pipeline",
    async () => {
      const receiver = new Receiver();
      await receiver.listen();
      try {
        // One run at 1 endpoint, then HOOK_RUNS in a row at 10, each with an agency of its own.
        const plan = [1, ...Array.from({ length: HOOK_RUNS }, () => 10)];
        for (const [i, endpoints] of plan.entries()) {
          const hookAgency = await api.agency(`Bench Hooks ${endpoints} #${i}`);
          const hookOwner = await api.user(hookAgency.id, "media_agency", "Hooks Owner");
          const key = await api.key(hookAgency.id, hookOwner.id);
          // With BENCH_PROFILE, the first run at 10 endpoints is profiled: where the pipeline's time goes.
          const inspector = inspectorOf(product.origin);
          const stop =
            PROFILE_DIR && inspector && i === 1 ? await startProfile(inspector, "webhooks-10-endpoints") : undefined;
          const run = await measurePipeline(
            api,
            receiver,
            { key, ownerId: hookOwner.id },
            endpoints,
            HOOK_RATE,
            HOOK_SECONDS,
            "product",
          );
          await stop?.();
          hooks.push(endpoints === 10 && HOOK_RUNS > 1 ? { ...run, name: `${run.name}, run ${i}` } : run);
        }
      } finally {
        await receiver.close();
      }
    },
    runs("webhooks"),
  );

  let replayRun: ReplayRun | undefined;
  await phase(
    "webhook replay",
    async () => {
      const agency = await api.agency("Bench Replay");
      const owner = await api.user(agency.id, "media_agency", "Replay Owner");
      replayRun = await measureReplay(api, { key: await api.key(agency.id, owner.id), ownerId: owner.id });
    },
    runs("replay"),
  );

  const bundles = new Map<string, BundleFile[]>();
  const coldStarts: ColdStarts[] = [];
  await phase(
    "bundle and cold start",
    async () => {
      for (const env of ["sandbox", "live"]) bundles.set(env, await measureBundle(env));
      coldStarts.push(
        ...(await measureColdStarts(COLD_STARTS, randomBytes(32).toString("base64url"), READY_TIMEOUT_MS)),
      );
    },
    runs("startup"),
  );

  // The table, in reading order, with the goals.
  if (stopping) return 130;
  const { rows, goals } = judgeRun(figures, growthRows, hooks, `${size(SMALL_ROWS)} to ${size(BIG_ROWS)} rows`);

  const loadAtEnd = loadavg();
  console.log(
    `\nMachine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB; ` +
      `Node ${process.version}; served by ${RUNNER_NAME}; load average ${loadAtStart[0]!.toFixed(1)} at start, ` +
      `${loadAtEnd[0]!.toFixed(1)} at end`,
  );
  console.log(
    `Load: autocannon on 127.0.0.1, ${CONNECTIONS} connections (list routes ${LIST_CONNECTIONS}), ${DURATION} s per ` +
      `row after a ${WARMUP} s warm-up (a route and the row it is judged against, or a list at both sizes, run in turns, ${ROUNDS} slices ` +
      `each; p50/p99 are the slices' medians); lists at ${size(SMALL_ROWS)} and ${size(BIG_ROWS)} rows per agency; ` +
      `webhooks: ${HOOK_RATE} creates/s for ${HOOK_SECONDS} s per run\n`,
  );
  printTable(rows);
  console.log(
    "\ncpu ms: CPU time of the serving processes (workerd and all) per request, steadier than req/s on a busy machine;" +
      " wkd ms: the part the workerd that runs the Worker spent (without the Node process around it and, under wrangler dev, its proxy's workerd)." +
      "\n×bare, ×floor: req/s against the bare route and the route's floor. ×ref: many tenants against the single key;" +
      ` @${size(BIG_ROWS)} rows against @${size(SMALL_ROWS)}.` +
      "\nWebhook rows: req/s = receipts per second; p50/p99 from sending the create to the receipt, per endpoint;" +
      " non-2xx = receipts missing after the wait, plus failed creates.",
  );
  for (const h of hooks) {
    console.log(
      `  ${h.name}: ${h.received}/${h.expected} received, ${h.duplicates} duplicate(s), ` +
        `${h.createFailures} failed create(s), waited ${h.settleSeconds.toFixed(1)} s after the last create; ` +
        `create answered in p50 ${h.create.p50.toFixed(0)} / p99 ${h.create.p99.toFixed(0)} ms, receipt after the ` +
        `answer p50 ${h.afterAnswer.p50.toFixed(0)} / p99 ${h.afterAnswer.p99.toFixed(0)} ms; by third of the run ` +
        `(send to receipt, p50/p99 ms): ${h.thirds.map((t) => `${t.p50.toFixed(0)}/${t.p99.toFixed(0)}`).join(", ")}` +
        (h.batches
          ? `; queue: ${h.batches.count} consumer batches of ${(h.batches.messages / h.batches.count).toFixed(1)} ` +
            `messages, ${h.batches.meanMs.toFixed(0)} ms each (p50 ${h.batches.p50Ms} / p99 ${h.batches.p99Ms}), busy ` +
            `${(100 * h.batches.busy).toFixed(0)}% of the run: at most ${h.batches.capacity.toFixed(0)} deliveries/s ` +
            `one batch at a time, ${h.offered}/s offered`
          : "") +
        (h.thread
          ? `; Worker's workerd: ${h.thread.msPerReceipt.toFixed(2)} cpu ms a receipt, its thread busy ` +
            `${(100 * h.thread.busy).toFixed(0)}% of the run`
          : ""),
    );
  }
  for (const r of rows) {
    const odd = Object.entries(r.statuses).filter(
      ([code]) => !/^2/.test(code) && !(r.name.includes("401") && code === "401"),
    );
    if (odd.length) console.log(`  ${r.name}: status ${odd.map(([c, n]) => `${c} ×${n}`).join(", ")}`);
  }
  for (const note of notes) console.log(`  ${note}`);
  const [withSeq, withoutSeq] = [figures.get("seqWith"), figures.get("seqWithout")];
  if (withSeq && withoutSeq) console.log(`  ${sequenceCost(withSeq, withoutSeq)}`);
  for (const [plainId, loggedId, where] of [
    ["bare", "bareLogged", "the bare route"],
    ["floorGet", "floorGetLogged", "the GET floor"],
  ] as const) {
    const [plain, logged] = [figures.get(plainId), figures.get(loggedId)];
    if (plain && logged) console.log(`  ${lineCost(plain, logged, where)}`);
  }
  if (replayRun) {
    printReplay(replayRun);
    goals.push({ title: "Webhook replay of many events beside live deliveries", verdicts: [replayVerdict(replayRun)] });
  }
  printStartup(bundles, coldStarts);
  goals.push(...judgeStartup(bundles, coldStarts));
  const errors = [...errorLines("product")].sort((a, b) => b[1] - a[1]);
  const errorCount = errors.reduce((n, [, count]) => n + count, 0);
  console.log(`\nProduct Worker log: ${errorCount} error line(s)${errors.length ? ", most frequent:" : "."}`);
  for (const [line, count] of errors.slice(0, 5)) console.log(`  ×${count} ${line}`);
  printGoals(goals);
  console.log(`\nRun took ${((Date.now() - began) / 1000).toFixed(0)} s.`);
  if (broken.length) {
    console.error(`\nThe bench broke in ${broken.length} phase(s):\n${broken.join("\n")}`);
    return 1;
  }
  return 0;
}

/** The event sequence's cost on the POST, in CPU per request and in throughput. */
function sequenceCost(withSeq: Figure, withoutSeq: Figure): string {
  const cpu =
    withSeq.cpuMs !== undefined && withoutSeq.cpuMs !== undefined
      ? `${withSeq.cpuMs.toFixed(2)} cpu ms with, ${withoutSeq.cpuMs.toFixed(2)} without ` +
        `(${(withSeq.cpuMs - withoutSeq.cpuMs).toFixed(2)} ms, ${(withSeq.cpuMs / withoutSeq.cpuMs).toFixed(3)}×); `
      : "";
  return (
    `event sequence on POST /api/v1/listings: ${cpu}${withSeq.rps.toFixed(0)} req/s with, ` +
    `${withoutSeq.rps.toFixed(0)} without (${(withSeq.rps / withoutSeq.rps).toFixed(3)}×)`
  );
}

/** What one log line adds to a route: CPU ms per request (all, and the Worker's workerd) and throughput. */
function lineCost(plain: Figure, logged: Figure, where: string): string {
  const diff = (of: (f: Figure) => number | undefined) => {
    const [a, b] = [of(logged), of(plain)];
    return a === undefined || b === undefined ? "?" : (a - b).toFixed(3);
  };
  return (
    `one log line on ${where}: ${diff((f) => f.cpuMs)} cpu ms per request ` +
    `(${diff((f) => f.workerdMs)} of it in the Worker's workerd), ` +
    `${(100 * (1 - logged.rps / plain.rps)).toFixed(1)}% of its throughput`
  );
}

/** 64 keys over 8 agencies (8 per agency), each agency with its own owner. */
async function manyTenants(api: Api): Promise<(BenchKey & { ownerId: string })[]> {
  const out: (BenchKey & { ownerId: string })[] = [];
  for (let a = 0; a < TENANT_AGENCIES; a++) {
    const agency = await api.agency(`Bench Tenant ${a}`);
    const owner = await api.user(agency.id, "media_agency", `Tenant Owner ${a}`);
    const keys = await Promise.all(Array.from({ length: KEYS_PER_AGENCY }, () => api.key(agency.id, owner.id)));
    out.push(...keys.map((k) => ({ ...k, ownerId: owner.id })));
  }
  return out;
}

/** The guard layers one at a time (BENCH_LAYERS=1): where a refused request's time goes. */
async function layers(api: Api, origin: string, agencyId: string, ownerId: string, figures: Map<string, Figure>) {
  const narrow = await api.key(agencyId, ownerId, ["listings:read"]);
  const url = `${origin}/api/v1/users/${ownerId}`;
  figures.set(
    "layer-format",
    await measure(
      "layer: key format refused, 401 (no storage)",
      { url, headers: { "X-API-Key": `sk_live_${"A".repeat(43)}` } },
      { expect: 401 },
    ),
  );
  figures.set(
    "layer-unknown",
    await measure(
      "layer: unknown key, 401 (hash + one D1 read)",
      { url, headers: { "X-API-Key": `sk_test_${"A".repeat(43)}` } },
      { expect: 401 },
    ),
  );
  figures.set(
    "layer-scope",
    await measure(
      "layer: gate admits, scope refused, 403 (one DO RPC)",
      { url, headers: { "X-API-Key": narrow.secret } },
      { expect: 403 },
    ),
  );
}

async function finish(code: number) {
  if (stopping) return;
  stopping = true;
  await stopChildren();
  cleanupNow();
  process.exit(code);
}

for (const signal of ["SIGINT", "SIGTERM", "SIGHUP"] as const) {
  process.on(signal, () => {
    process.stderr.write(`\n${signal}: stopping the Workers and removing ${stateDir}\n`);
    void finish(130);
  });
}

main().then(
  (code) => finish(code),
  (err: Error) => {
    if (!stopping) console.error(err.stack ?? err.message);
    return finish(1);
  },
);
