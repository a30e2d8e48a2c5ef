// The Worker as it would be uploaded (its bundle, raw and gzipped, from `wrangler deploy
// --dry-run`) and its cold start measured locally: wall time from spawning a fresh
// `wrangler dev` to its first answer, for the product and, for reference, the baseline.
import { mkdirSync, readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { freePorts } from "../../scripts/free-ports.ts";
import { runChild, startServer, stateDir, stopServer } from "./processes.ts";
import { type Goal, verdict } from "./report.ts";

export interface BundleFile {
  name: string;
  bytes: number;
  gzip: number;
}

/** The modules `wrangler deploy --dry-run` writes for `env` (source maps and the README left out). */
export async function measureBundle(env: string): Promise<BundleFile[]> {
  const outdir = join(stateDir, `bundle-${env}`);
  mkdirSync(outdir, { recursive: true });
  await runChild("wrangler", ["deploy", "--dry-run", "--env", env, "--outdir", outdir], `bundle-${env}`, 300_000);
  return readdirSync(outdir)
    .filter((name) => !name.endsWith(".map") && name !== "README.md")
    .map((name) => {
      const bytes = readFileSync(join(outdir, name));
      return { name, bytes: bytes.byteLength, gzip: gzipSync(bytes).byteLength };
    });
}

export interface ColdStarts {
  name: string;
  /** Milliseconds from spawning `wrangler dev` to the first answer, one per fresh start. */
  ms: number[];
}

/** Poll interval while a fresh server starts: the resolution of a cold start figure. */
const POLL_MS = 20;

/** Builds a Worker as `wrangler deploy` would upload it (`config` names its configuration) and answers its script's path. */
async function prebuilt(name: string, config: string[]): Promise<string> {
  const outdir = join(stateDir, `prebuilt-${name}`);
  mkdirSync(outdir, { recursive: true });
  await runChild("wrangler", ["deploy", "--dry-run", ...config, "--outdir", outdir], `prebuilt-${name}`, 300_000);
  const script = readdirSync(outdir).find((file) => file.endsWith(".js"));
  if (!script) throw new Error(`wrangler deploy --dry-run wrote no script for ${name}`);
  return join(outdir, script);
}

/**
 * `times` fresh starts of each Worker, taken in turns, each on state of its own and
 * stopped before the next: the product answering an unauthenticated read (a 401, no
 * storage touched), the baseline its bare route, and the product's configuration started
 * with a stub of no code in place of the product's, which separates what the bindings add
 * to a start from what the code adds (its bundling by wrangler and its evaluation). Then
 * the product and the baseline again, each started from the script `wrangler deploy` would
 * upload (built before, and started with `--no-bundle`): a deployed cold start bundles
 * nothing, so these two tell wrangler's bundling apart from the script's own start.
 */
export async function measureColdStarts(times: number, secretKey: string, readyMs: number): Promise<ColdStarts[]> {
  const workers = [
    { name: "product Worker (401 of GET /api/v1/users)", config: [], path: "/api/v1/users" },
    { name: "baseline Worker (GET /bare)", config: ["--config", "bench/baseline/wrangler.jsonc"], path: "/bare" },
    // What the goal does not judge but the reason needs: the product's bindings started without its code.
    {
      name: "the product's bindings, none of its code (bench/baseline/bindings-only.ts)",
      config: ["bench/baseline/bindings-only.ts", "--config", "wrangler.jsonc"],
      path: "/api/v1/users",
    },
    {
      name: "product Worker as uploaded, not bundled on start",
      config: [await prebuilt("product", []), "--no-bundle", "--config", "wrangler.jsonc"],
      path: "/api/v1/users",
    },
    {
      name: "baseline Worker as uploaded, not bundled on start",
      config: [
        await prebuilt("baseline", ["--config", "bench/baseline/wrangler.jsonc"]),
        "--no-bundle",
        "--config",
        "bench/baseline/wrangler.jsonc",
      ],
      path: "/bare",
    },
  ];
  const out: ColdStarts[] = workers.map((w) => ({ name: w.name, ms: [] }));
  for (let i = 0; i < times; i++) {
    for (const [w, worker] of workers.entries()) {
      const [port, inspector] = (await freePorts(2)) as [number, number];
      const started = performance.now();
      const child = await startServer(
        "wrangler",
        [
          "dev",
          ...worker.config,
          "--port",
          String(port),
          "--inspector-port",
          String(inspector),
          "--ip",
          "127.0.0.1",
          "--log-level",
          "warn",
          "--show-interactive-dev-session=false",
          // As `npm run dev` starts the product: its Cron triggers fired on request, so wrangler
          // skips the warning that they are not (formatting it costs its start about 0.1 s).
          "--test-scheduled",
          "--persist-to",
          join(stateDir, `cold-${w}-${i}`),
          "--var",
          `SECRET_KEY:${secretKey}`,
        ],
        `cold-${w}`,
        `http://127.0.0.1:${port}${worker.path}`,
        readyMs,
        POLL_MS,
      );
      out[w]!.ms.push(performance.now() - started);
      await stopServer(child);
    }
  }
  return out;
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(0)} KiB`;
const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;

export function printStartup(bundles: Map<string, BundleFile[]>, coldStarts: ColdStarts[]) {
  if (bundles.size) console.log("\nBundle (wrangler deploy --dry-run, source maps left out):");
  for (const [env, files] of bundles) {
    const total = files.reduce((n, f) => n + f.bytes, 0);
    const gzip = files.reduce((n, f) => n + f.gzip, 0);
    const each = files.map((f) => `${f.name} ${kib(f.bytes)} / ${kib(f.gzip)}`).join("; ");
    console.log(`  ${env}: ${kib(total)}, gzip ${kib(gzip)} (${each})`);
  }
  if (coldStarts.length)
    console.log(
      "\nCold start, locally: wall time from spawning a fresh `wrangler dev` (its own start and bundling " +
        `included) to the first answer, polled every ${POLL_MS} ms:`,
    );
  for (const c of coldStarts)
    console.log(
      `  ${c.name}: median ${(median(c.ms) / 1000).toFixed(2)} s of ${c.ms.length} ` +
        `(${c.ms.map((ms) => (ms / 1000).toFixed(2)).join(", ")} s)`,
    );
  const [product, baseline, bindings] = coldStarts;
  if (product && baseline && bindings) {
    const [p, b, o] = [median(product.ms), median(baseline.ms), median(bindings.ms)];
    console.log(
      `  against the baseline: the bindings alone ${(o / b).toFixed(2)}×, the product ${(p / b).toFixed(2)}×; ` +
        `the product's code adds ${((p - o) / 1000).toFixed(2)} s to its bindings' start`,
    );
  }
  const [, , , productUploaded, baselineUploaded] = coldStarts;
  if (product && baseline && productUploaded && baselineUploaded) {
    const [p, b, pu, bu] = [product, baseline, productUploaded, baselineUploaded].map((c) => median(c.ms)) as [
      number,
      number,
      number,
      number,
    ];
    console.log(
      `  as uploaded (nothing bundled on start): the product ${(pu / bu).toFixed(2)}× the baseline; wrangler's ` +
        `bundling on start adds ${((p - pu) / 1000).toFixed(2)} s to the product, ${((b - bu) / 1000).toFixed(2)} s ` +
        "to the baseline",
    );
  }
}

/** The Worker as uploaded: at most this many bytes raw, and gzipped. */
const BUNDLE_GOAL = { bytes: 2_000_000, gzip: 600_000 };
/** A cold start at most this many times the baseline Worker's (medians). */
const COLD_START_GOAL = 1.3;

/** The bundle and cold start goals, judged from this run's figures (none when the phase did not run). */
export function judgeStartup(bundles: Map<string, BundleFile[]>, coldStarts: ColdStarts[]): Goal[] {
  const goals: Goal[] = [];
  if (bundles.size) {
    const sizes = [...bundles].map(([env, files]) => ({
      env,
      bytes: files.reduce((n, f) => n + f.bytes, 0),
      gzip: files.reduce((n, f) => n + f.gzip, 0),
    }));
    goals.push({
      title: `Worker bundle ≤ ${BUNDLE_GOAL.bytes / 1e6} MB, ≤ ${BUNDLE_GOAL.gzip / 1e3} KB gzip`,
      verdicts: [
        verdict(
          sizes.every((s) => s.bytes <= BUNDLE_GOAL.bytes && s.gzip <= BUNDLE_GOAL.gzip),
          sizes
            .map((s) => `${s.env} ${(s.bytes / 1e6).toFixed(2)} MB / ${(s.gzip / 1e3).toFixed(0)} KB gzip`)
            .join(", "),
        ),
      ],
    });
  }
  const [product, baseline] = coldStarts;
  if (product && baseline) {
    const ratio = median(product.ms) / median(baseline.ms);
    goals.push({
      title: `cold start ≤ ${COLD_START_GOAL}× the baseline Worker's`,
      verdicts: [
        verdict(
          ratio <= COLD_START_GOAL,
          `${ratio.toFixed(2)}× (${(median(product.ms) / 1000).toFixed(2)} s against ` +
            `${(median(baseline.ms) / 1000).toFixed(2)} s)`,
        ),
      ],
    });
  }
  return goals;
}
