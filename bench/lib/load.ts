// One measured row: autocannon against one route after a warm-up, with the CPU time its
// server spent per request (steadier than throughput on a shared machine).
import autocannon from "autocannon";
import { cpuMsOfGroup } from "./processes.ts";
import { PROFILE_DIR, startProfile } from "./profile.ts";

export const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** The list routes are measured with fewer connections, as they were first measured. */
export const LIST_CONNECTIONS = Number(process.env.BENCH_LIST_CONNECTIONS ?? 8);
export const DURATION = Number(process.env.BENCH_SECONDS ?? 10);
export const WARMUP = Number(process.env.BENCH_WARMUP ?? 3);

export interface Figure {
  name: string;
  rps: number;
  p50: number;
  p99: number;
  /** Answers other than the expected ones, plus errors and timeouts. */
  unexpected: number;
  /** Status codes seen and how often. */
  statuses: Record<string, number>;
  /** CPU milliseconds the serving `wrangler dev` (workerd and all) spent per request, when known. */
  cpuMs?: number;
}

interface Server {
  /** The process group of its `wrangler dev`, which holds its workerd. */
  group?: number;
  /** Its inspector port, for BENCH_PROFILE. */
  inspector?: number;
}
const servers = new Map<string, Server>();

/** Names the processes behind an origin, so its rows report CPU per request (and can be profiled). */
export function registerServer(origin: string, server: Server) {
  servers.set(new URL(origin).origin, server);
}

export interface MeasureOptions {
  connections?: number;
  /** The status every answer should have: 2xx by default. */
  expect?: number;
}

export async function measure(
  name: string,
  opts: Parameters<typeof autocannon>[0],
  { connections = CONNECTIONS, expect }: MeasureOptions = {},
): Promise<Figure> {
  process.stderr.write(`· ${name}\n`);
  const server = opts.url ? servers.get(new URL(String(opts.url)).origin) : undefined;
  if (WARMUP > 0) await autocannon({ ...opts, connections, duration: WARMUP });
  const stop = PROFILE_DIR && server?.inspector ? await startProfile(server.inspector, name) : undefined;
  const cpuBefore = server?.group ? cpuMsOfGroup(server.group) : undefined;
  const r = await autocannon({ ...opts, connections, duration: DURATION });
  const cpuAfter = server?.group ? cpuMsOfGroup(server.group) : undefined;
  await stop?.();
  const statuses = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]));
  const wrong =
    expect === undefined
      ? r.non2xx
      : Object.entries(statuses).reduce((n, [code, count]) => (Number(code) === expect ? n : n + count), 0);
  return {
    name,
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    unexpected: wrong + r.errors + r.timeouts,
    statuses,
    cpuMs:
      cpuBefore !== undefined && cpuAfter !== undefined && r.requests.total > 0
        ? (cpuAfter - cpuBefore) / r.requests.total
        : undefined,
  };
}
