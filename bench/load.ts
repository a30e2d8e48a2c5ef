// npm run load: 60 s of mixed traffic at 32 connections against the product Worker under
// `wrangler dev` (fresh local state, without its local tooling: bench/lib/local-tooling.ts),
// reporting socket errors and unexpected statuses.
// npm run soak: the same mix for 5 minutes, printing the workerd processes' memory every
// 30 s and its growth. Both print figures; no test asserts them. LOAD_SECONDS shortens a
// run (never by default); LOAD_MIX=reads sends only the reads; LOAD_TARGET=floor sends the same
// shape to the baseline Worker's floors instead, to compare the local runtime's own memory.

import { randomBytes, randomUUID } from "node:crypto";
import { readdirSync, readFileSync } from "node:fs";
import autocannon from "autocannon";
import { freePorts } from "../scripts/free-ports.ts";
import { applyLocalMigrations } from "../scripts/local-migrations.ts";
import { Api } from "./lib/api.ts";
import { WITHOUT_LOCAL_TOOLING } from "./lib/local-tooling.ts";
import { cleanupNow, sleep, startServer, stateDir, stopChildren } from "./lib/processes.ts";

const soak = process.argv.includes("--soak");
const SECONDS = Number(process.env.LOAD_SECONDS ?? (soak ? 300 : 60));
const CONNECTIONS = 32;
const SAMPLE_MS = 30_000;

/** The resident memory, in MiB, of the workerd processes at or below `pid`. */
function treeRss(pid: number): number {
  let kib = 0;
  const visit = (p: number, depth: number) => {
    if (depth > 8) return;
    try {
      if (readFileSync(`/proc/${p}/cmdline`, "utf8").includes("workerd")) {
        const status = readFileSync(`/proc/${p}/status`, "utf8");
        kib += Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0);
      }
      for (const task of readdirSync(`/proc/${p}/task`)) {
        const children = readFileSync(`/proc/${p}/task/${task}/children`, "utf8").trim();
        for (const child of children ? children.split(" ") : []) visit(Number(child), depth + 1);
      }
    } catch {
      // the process ended meanwhile
    }
  };
  visit(pid, 0);
  return kib / 1024;
}

type Request = {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  setupRequest?: (req: Record<string, unknown>) => Record<string, unknown>;
};

/** The mix an integrator sends: reads of one user, the listings and the tours, and creates. */
async function productMix(origin: string, operatorToken: string): Promise<Request[]> {
  const api = new Api(origin, operatorToken);
  const agency = await api.agency("Load Agency");
  const owner = await api.user(agency.id, "media_agency", "Load Owner");
  const key = await api.key(agency.id, owner.id);
  const headers = { "X-API-Key": key.secret };
  const listing = JSON.stringify({ address: "1 Load Lane", owner_user_id: owner.id, agent_one_id: owner.id });
  return [
    { method: "GET", path: `/api/v1/users/${owner.id}`, headers },
    { method: "GET", path: "/api/v1/listings?limit=20", headers },
    {
      method: "POST",
      path: "/api/v1/listings",
      body: listing,
      setupRequest: (req: Record<string, unknown>) => ({
        ...req,
        headers: { ...headers, "Content-Type": "application/json", "X-Idempotency-Key": randomUUID() },
      }),
    },
    { method: "GET", path: "/api/v1/tours", headers },
  ];
}

/**
 * The same shape against the baseline Worker's floors (LOAD_TARGET=floor): the primitives with
 * no product code, so a soak shows how much memory the local runtime itself takes under load.
 */
async function floorMix(origin: string): Promise<Request[]> {
  const setup = await fetch(`${origin}/setup`, { method: "POST", signal: AbortSignal.timeout(30_000) });
  if (!setup.ok) throw new Error(`baseline setup answered ${setup.status}`);
  return [
    { method: "GET", path: "/floor/get" },
    { method: "GET", path: "/floor/get" },
    {
      method: "POST",
      path: "/floor/post",
      body: JSON.stringify({ address: "1 Load Lane" }),
      setupRequest: (req: Record<string, unknown>) => ({
        ...req,
        headers: { "Content-Type": "application/json", "X-Idempotency-Key": randomUUID() },
      }),
    },
    { method: "GET", path: "/bare" },
  ];
}

async function main() {
  const [port, inspector] = await freePorts(2);
  const origin = `http://127.0.0.1:${port}`;
  const operatorToken = randomBytes(18).toString("base64url");
  const persist = ["--persist-to", stateDir];
  await applyLocalMigrations(stateDir);
  const floor = process.env.LOAD_TARGET === "floor";
  const server = await startServer(
    "wrangler",
    [
      "dev",
      ...(floor ? ["--config", "bench/baseline/wrangler.jsonc"] : []),
      "--ip",
      "127.0.0.1",
      "--port",
      String(port),
      "--inspector-port",
      String(inspector),
      "--log-level",
      "warn",
      "--show-interactive-dev-session=false",
      ...persist,
      ...(floor
        ? []
        : ["--var", `OPERATOR_TOKEN:${operatorToken}`, "--var", `SECRET_KEY:${randomBytes(32).toString("base64url")}`]),
    ],
    floor ? "baseline" : "product",
    floor ? `${origin}/bare` : `${origin}/api/v1/openapi.json`,
    120_000,
    undefined,
    WITHOUT_LOCAL_TOOLING,
  );
  const all = floor ? await floorMix(origin) : await productMix(origin, operatorToken);
  // LOAD_MIX=reads leaves the writes out, so memory is watched over data that does not grow.
  const requests = process.env.LOAD_MIX === "reads" ? all.filter((r) => r.method === "GET") : all;

  const samples: number[] = [];
  const sample = () => {
    const mib = treeRss(server.pid ?? 0);
    samples.push(mib);
    console.log(`memory after ${(samples.length - 1) * (SAMPLE_MS / 1000)} s: ${mib.toFixed(1)} MiB`);
  };
  if (soak) sample();
  const sampler = soak ? setInterval(sample, SAMPLE_MS) : undefined;
  const result = await autocannon({ url: origin, connections: CONNECTIONS, duration: SECONDS, requests });
  if (sampler) clearInterval(sampler);
  if (soak) sample();

  const statuses = Object.entries(result.statusCodeStats ?? {})
    .map(([code, s]) => `${code}×${s.count}`)
    .join(" ");
  console.log(`${soak ? "soak" : "load"}: ${SECONDS} s at ${CONNECTIONS} connections, mixed GET and POST`);
  console.log(
    `  requests: ${result.requests.total} (${result.requests.average.toFixed(0)} req/s), statuses ${statuses}`,
  );
  console.log(`  latency: p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms`);
  console.log(`  socket errors: ${result.errors}, timeouts: ${result.timeouts}, unexpected statuses: ${result.non2xx}`);
  if (soak && samples.length > 1) {
    // Growth from the first sample taken under load to the last.
    const base = samples[1] ?? samples[0]!;
    const growth = ((samples[samples.length - 1]! - base) / base) * 100;
    console.log(`  memory growth under load: ${growth.toFixed(1)}% (goal ≤ 10%)`);
    // The runtime's heaps take a while to reach their working size: the second half shows what is left after.
    const half = samples[Math.floor(samples.length / 2)]!;
    const late = ((samples[samples.length - 1]! - half) / half) * 100;
    console.log(`  memory growth over the second half: ${late.toFixed(1)}%`);
  }
}

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    stopping = true;
    cleanupNow();
    process.exit(130);
  });
}

main()
  .catch((err: unknown) => {
    if (!stopping) console.error(err instanceof Error ? err.message : String(err));
    process.exitCode = 1;
  })
  .finally(async () => {
    await stopChildren();
    await sleep(0);
  });
