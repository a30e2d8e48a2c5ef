// How the bench serves a Worker it measures. By default through bench/serve.ts: wrangler's
// programmatic dev server on the same configuration, bundle, bindings and local state as
// `wrangler dev`, with no inspector, answered by the workerd that runs the Worker itself.
// BENCH_RUNNER=wrangler serves it with `wrangler dev` as before (an inspector attached,
// every request and console line relayed by wrangler's proxy), to compare the two.
import type { ChildProcess } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { freePorts } from "../../scripts/free-ports.ts";
import { pidListeningOn } from "./cpu.ts";
import { registerServer, type Server } from "./load.ts";
import { startServer, stateDir } from "./processes.ts";
import { PROFILE_DIR } from "./profile.ts";

const RUNNERS = ["direct", "wrangler"] as const;
const RUNNER = (process.env.BENCH_RUNNER || "direct") as (typeof RUNNERS)[number];
if (!(RUNNERS as readonly string[]).includes(RUNNER))
  throw new Error(`BENCH_RUNNER: unknown runner ${RUNNER} (${RUNNERS})`);

/** What the table's header says served the Workers. */
export const RUNNER_NAME =
  RUNNER === "wrangler"
    ? "wrangler dev (its proxy and an attached inspector relay each request and console line)"
    : "wrangler's dev server without an inspector, answered by the Worker's own workerd (bench/serve.ts)";

export interface WorkerSpec {
  /** Its wrangler configuration file; the product's when unset. */
  config?: string;
  /** The local state directory (`--persist-to`). */
  persist: string;
  vars: Record<string, string>;
  /** The name of its log file in the state directory. */
  logName: string;
  /** A path it answers once started (below 500). */
  readyPath: string;
  readyMs: number;
}

export interface ServedWorker {
  child: ChildProcess;
  origin: string;
}

/** Starts a Worker with the bench's runner and registers it for CPU readings (and profiles). */
export async function serveWorker(spec: WorkerSpec): Promise<ServedWorker> {
  const [port, inspector] = (await freePorts(2)) as [number, number];
  if (RUNNER === "wrangler") {
    const origin = `http://127.0.0.1:${port}`;
    const child = await startServer(
      "wrangler",
      [
        "dev",
        ...(spec.config ? ["--config", spec.config] : []),
        "--port",
        String(port),
        "--inspector-port",
        String(inspector),
        "--ip",
        "127.0.0.1",
        "--log-level",
        "warn",
        "--show-interactive-dev-session=false",
        "--persist-to",
        spec.persist,
        ...Object.entries(spec.vars).flatMap(([k, v]) => ["--var", `${k}:${v}`]),
      ],
      spec.logName,
      `${origin}${spec.readyPath}`,
      spec.readyMs,
    );
    registerServer(origin, { group: child.pid, inspector });
    return { child, origin };
  }
  const readyFile = join(stateDir, `${spec.logName}-${randomBytes(4).toString("hex")}.ready.json`);
  const origin = () =>
    existsSync(readyFile) ? (JSON.parse(readFileSync(readyFile, "utf8")) as { origin: string }).origin : undefined;
  const options = {
    config: spec.config,
    persist: spec.persist,
    vars: spec.vars,
    readyFile,
    ...(PROFILE_DIR ? { inspectorPort: inspector } : {}),
  };
  const child = await startServer(
    process.execPath,
    ["bench/serve.ts", JSON.stringify(options)],
    spec.logName,
    () => {
      const known = origin();
      return known && `${known}${spec.readyPath}`;
    },
    spec.readyMs,
  );
  const served = origin()!;
  const server: Server = { group: child.pid, ...(PROFILE_DIR ? { inspector } : {}) };
  if (child.pid !== undefined) server.workerPid = pidListeningOn(Number(new URL(served).port), child.pid);
  if (server.workerPid === undefined) process.stderr.write(`! ${spec.logName}: no workerd found on ${served}\n`);
  registerServer(served, server);
  return { child, origin: served };
}
