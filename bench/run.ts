// npm run bench: a repeatable load run on loopback. It starts the baseline Worker and
// the product Worker under `wrangler dev` (fresh local state), seeds a key, then measures
// a bare route, an authenticated rate-limited GET and an idempotent POST with autocannon.
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { cpus, tmpdir, totalmem } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
const WARMUP = 3;
const BASE_PORT = 8811;
const APP_PORT = 8812;
const env = { ...process.env, WRANGLER_SEND_METRICS: "false", DO_NOT_TRACK: "1" };
const state = mkdtempSync(join(tmpdir(), "alms-bench-"));
const operatorToken = randomBytes(18).toString("base64url");
const children: ChildProcess[] = [];

function start(args: string[]): ChildProcess {
  const child = spawn("wrangler", args, { env, stdio: ["ignore", "ignore", "inherit"] });
  children.push(child);
  return child;
}

async function ready(url: string) {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(url)).status < 500) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${url} did not come up`);
}

async function internal(path: string, body?: unknown, method = "POST") {
  const res = await fetch(`http://127.0.0.1:${APP_PORT}${path}`, {
    method,
    headers: { Authorization: `Bearer ${operatorToken}`, "Content-Type": "application/json" },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const json = (await res.json()) as any;
  if (!res.ok) throw new Error(`${path}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

interface Figure {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
}

async function measure(name: string, opts: Parameters<typeof autocannon>[0]): Promise<Figure> {
  await autocannon({ ...opts, connections: CONNECTIONS, duration: WARMUP });
  const r = await autocannon({ ...opts, connections: CONNECTIONS, duration: DURATION });
  const refusal = /\b40[13]\b/.test(name);
  const expected = refusal ? r["2xx"] + r.errors + r.timeouts : r.non2xx + r.errors + r.timeouts;
  return { name, rps: r.requests.average, p50: r.latency.p50, p99: r.latency.p99, non2xx: expected };
}

async function main() {
  const migrate = spawnSync("wrangler", ["d1", "migrations", "apply", "DB", "--local", "--persist-to", state], {
    env,
    encoding: "utf8",
  });
  if (migrate.status !== 0) throw new Error(migrate.stderr || migrate.stdout);
  start([
    "dev",
    "--config",
    "bench/baseline/wrangler.jsonc",
    "--ip",
    "127.0.0.1",
    "--port",
    String(BASE_PORT),
    "--inspector-port",
    "9311",
    "--persist-to",
    state,
  ]);
  const secret = randomBytes(32).toString("base64url");
  start([
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(APP_PORT),
    "--inspector-port",
    "9312",
    "--persist-to",
    state,
    "--var",
    `OPERATOR_TOKEN:${operatorToken}`,
    "--var",
    `SECRET_KEY:${secret}`,
  ]);
  await Promise.all([
    ready(`http://127.0.0.1:${BASE_PORT}/bare`),
    ready(`http://127.0.0.1:${APP_PORT}/api/v1/openapi.json`),
  ]);

  const agency = await internal("/internal/v1/agencies", { name: "Bench Agency", kind: "media_agency" });
  const owner = await internal("/internal/v1/users", {
    agency_id: agency.id,
    role: "media_agency",
    name: "Bench Owner",
    email: `owner-${randomUUID()}@bench.test`,
  });
  const minted = await internal("/internal/v1/api-keys", { agency_id: agency.id, minted_by_user_id: owner.id });
  // Budgets high enough that the load measures the guards' work, not 429s.
  await internal(
    `/internal/v1/api-keys/${minted.key.id}`,
    { rate_limit_overrides: { read_user_single: 100000, create_listing: 100000 } },
    "PATCH",
  );
  const headers = { "X-API-Key": minted.secret as string };

  const narrow = await internal("/internal/v1/api-keys", {
    agency_id: agency.id,
    minted_by_user_id: owner.id,
    scopes: ["listings:read"],
  });
  await internal(
    `/internal/v1/api-keys/${narrow.key.id}`,
    { rate_limit_overrides: { read_user_single: 100000 } },
    "PATCH",
  );
  const layers = process.env.BENCH_LAYERS
    ? [
        await measure("layer: key format refused, 401 (no storage)", {
          url: `http://127.0.0.1:${APP_PORT}/api/v1/users/${owner.id}`,
          headers: { "X-API-Key": `sk_live_${"A".repeat(43)}` },
        }),
        await measure("layer: unknown key, 401 (hash + one D1 read)", {
          url: `http://127.0.0.1:${APP_PORT}/api/v1/users/${owner.id}`,
          headers: { "X-API-Key": `sk_test_${"A".repeat(43)}` },
        }),
        await measure("layer: gate admits, scope refused, 403 (one DO RPC)", {
          url: `http://127.0.0.1:${APP_PORT}/api/v1/users/${owner.id}`,
          headers: { "X-API-Key": narrow.secret },
        }),
      ]
    : [];

  const figures = [
    await measure("bare route (baseline Worker)", { url: `http://127.0.0.1:${BASE_PORT}/bare` }),
    await measure("bare route + one Durable Object RPC (baseline)", { url: `http://127.0.0.1:${BASE_PORT}/do` }),
    await measure("bare route + one D1 read (baseline)", { url: `http://127.0.0.1:${BASE_PORT}/d1` }),
    await measure("unauthenticated request, 401 (product: routing, envelope)", {
      url: `http://127.0.0.1:${APP_PORT}/api/v1/users`,
    }),
    await measure("GET /api/v1/users/{id} (auth + rate limit + D1 read)", {
      url: `http://127.0.0.1:${APP_PORT}/api/v1/users/${owner.id}`,
      headers,
    }),
    await measure("POST /api/v1/listings (auth + rate limit + idempotency + D1 batch)", {
      url: `http://127.0.0.1:${APP_PORT}/api/v1/listings`,
      requests: [
        {
          method: "POST",
          body: JSON.stringify({ address: "1 Bench Street", owner_user_id: owner.id, agent_one_id: owner.id }),
          setupRequest: (req: any) => ({
            ...req,
            headers: { ...headers, "Content-Type": "application/json", "X-Idempotency-Key": randomUUID() },
          }),
        },
      ],
    }),
    ...layers,
  ];

  const [bare] = figures;
  console.log(
    `\nMachine: ${cpus().length} × ${cpus()[0]?.model ?? "cpu"}, ${Math.round(totalmem() / 2 ** 30)} GiB; Node ${process.version}; wrangler dev (local workerd)`,
  );
  console.log(
    `Load: autocannon, ${CONNECTIONS} connections, ${DURATION} s per route after a ${WARMUP} s warm-up, on 127.0.0.1\n`,
  );
  console.log(
    "route".padEnd(70),
    "req/s".padStart(8),
    "p50 ms".padStart(8),
    "p99 ms".padStart(8),
    "rps ratio".padStart(10),
    "p50 +ms".padStart(8),
    "unexpected".padStart(11),
  );
  for (const f of figures) {
    console.log(
      f.name.padEnd(70),
      f.rps.toFixed(0).padStart(8),
      f.p50.toFixed(1).padStart(8),
      f.p99.toFixed(1).padStart(8),
      (f.rps / bare!.rps).toFixed(2).padStart(10),
      (f.p50 - bare!.p50).toFixed(1).padStart(8),
      String(f.non2xx).padStart(11),
    );
  }
}

function stop() {
  for (const child of children) child.kill("SIGINT");
  rmSync(state, { recursive: true, force: true });
}

main().then(
  () => {
    stop();
    process.exit(0);
  },
  (err: Error) => {
    console.error(err.message);
    stop();
    process.exit(1);
  },
);
