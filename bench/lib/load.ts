// One measured row: autocannon against one route after a warm-up, with the CPU time its
// server spent per request (steadier than throughput on a shared machine).
import autocannon from "autocannon";
import { cpuMsOfGroup, type GroupCpu } from "./cpu.ts";
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
  /** CPU milliseconds the serving Worker's processes (workerd and all) spent per request, when known. */
  cpuMs?: number;
  /** The part of `cpuMs` the workerd that runs the Worker spent, without the Node process and proxy around it. */
  workerdMs?: number;
}

export interface Server {
  /** The process group of its `wrangler dev` or runner, which holds its workerd. */
  group?: number;
  /** The workerd that runs the Worker, when known (else the one with an inspector). */
  workerPid?: number;
  /** Its inspector port, for BENCH_PROFILE. */
  inspector?: number;
}
const servers = new Map<string, Server>();

/** Names the processes behind an origin, so its rows report CPU per request (and can be profiled). */
export function registerServer(origin: string, server: Server) {
  servers.set(new URL(origin).origin, server);
}

/** The CPU its processes have spent so far, for the server at `origin` when it is registered (see cpuMsOfGroup). */
export function cpuSoFar(origin: string): GroupCpu | undefined {
  const server = servers.get(new URL(origin).origin);
  return server?.group ? cpuMsOfGroup(server.group, server.workerPid) : undefined;
}

/** The inspector port of the Worker served at `origin`, when it has one (BENCH_PROFILE). */
export const inspectorOf = (origin: string) => servers.get(new URL(origin).origin)?.inspector;

export interface MeasureOptions {
  connections?: number;
  /** The status every answer should have: 2xx by default. */
  expect?: number;
}

/** A row to measure: its name, autocannon's options and ours. */
export interface Spec {
  name: string;
  opts: Parameters<typeof autocannon>[0];
  options?: MeasureOptions;
  /** Runs each of the row's slices inside other work (another load beside it, say). */
  around?: <T>(slice: () => Promise<T>) => Promise<T>;
}

/** Rounds of an alternated measurement: each row's time is cut into this many slices, taken in turn. */
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);

interface Slice {
  seconds: number;
  requests: number;
  p50: number;
  p99: number;
  unexpected: number;
  statuses: Record<string, number>;
  cpuMs?: number;
  workerdMs?: number;
}

async function slice(spec: Spec, seconds: number, profile: boolean): Promise<Slice> {
  const { opts, options: { connections = CONNECTIONS, expect } = {} } = spec;
  const server = opts.url ? servers.get(new URL(String(opts.url)).origin) : undefined;
  const stop =
    profile && PROFILE_DIR && server?.inspector ? await startProfile(server.inspector, spec.name) : undefined;
  const cpuBefore = server?.group ? cpuMsOfGroup(server.group, server.workerPid) : undefined;
  const r = await autocannon({ ...opts, connections, duration: seconds });
  const cpuAfter = server?.group ? cpuMsOfGroup(server.group, server.workerPid) : undefined;
  await stop?.();
  const statuses = Object.fromEntries(Object.entries(r.statusCodeStats ?? {}).map(([code, s]) => [code, s.count]));
  const wrong =
    expect === undefined
      ? r.non2xx
      : Object.entries(statuses).reduce((n, [code, count]) => (Number(code) === expect ? n : n + count), 0);
  return {
    seconds: r.duration,
    requests: r.requests.total,
    p50: r.latency.p50,
    p99: r.latency.p99,
    unexpected: wrong + r.errors + r.timeouts,
    statuses,
    cpuMs: cpuBefore && cpuAfter ? cpuAfter.total - cpuBefore.total : undefined,
    workerdMs: cpuBefore && cpuAfter ? cpuAfter.workerd - cpuBefore.workerd : undefined,
  };
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

/**
 * One figure from the same row measured several times for equal durations (on fresh Workers
 * each time, say): each run taken as a slice of one second, so req/s is their mean, CPU is per
 * request over all their requests, and p50 and p99 are the runs' medians.
 */
export function mergeFigures(figures: Figure[]): Figure {
  const [first] = figures;
  if (!first) throw new Error("mergeFigures: no figure to merge");
  const total = (perRequest: number | undefined, requests: number) =>
    perRequest === undefined ? undefined : perRequest * requests;
  return figureOf(
    first.name,
    figures.map((f) => ({
      seconds: 1,
      requests: f.rps,
      p50: f.p50,
      p99: f.p99,
      unexpected: f.unexpected,
      statuses: f.statuses,
      cpuMs: total(f.cpuMs, f.rps),
      workerdMs: total(f.workerdMs, f.rps),
    })),
  );
}

/** One figure from a row's slices: req/s and CPU over all of them, p50 and p99 as the slices' medians. */
function figureOf(name: string, slices: Slice[]): Figure {
  const requests = slices.reduce((n, s) => n + s.requests, 0);
  const seconds = slices.reduce((n, s) => n + s.seconds, 0);
  const statuses: Record<string, number> = {};
  for (const s of slices)
    for (const [code, n] of Object.entries(s.statuses)) statuses[code] = (statuses[code] ?? 0) + n;
  const perRequest = (of: (s: Slice) => number | undefined) =>
    slices.every((s) => of(s) !== undefined) && requests > 0
      ? slices.reduce((n, s) => n + of(s)!, 0) / requests
      : undefined;
  return {
    name,
    rps: seconds > 0 ? requests / seconds : 0,
    p50: median(slices.map((s) => s.p50)),
    p99: median(slices.map((s) => s.p99)),
    unexpected: slices.reduce((n, s) => n + s.unexpected, 0),
    statuses,
    cpuMs: perRequest((s) => s.cpuMs),
    workerdMs: perRequest((s) => s.workerdMs),
  };
}

export async function measure(
  name: string,
  opts: Parameters<typeof autocannon>[0],
  options: MeasureOptions = {},
): Promise<Figure> {
  process.stderr.write(`· ${name}\n`);
  const spec = { name, opts, options };
  if (WARMUP > 0) await autocannon({ ...opts, connections: options.connections ?? CONNECTIONS, duration: WARMUP });
  return figureOf(name, [await slice(spec, DURATION, true)]);
}

/**
 * Rows compared with each other, measured in turns: after a warm-up each, every row runs
 * for DURATION / ROUNDS seconds, then the next, ROUNDS times over, in an order that
 * reverses every other round (A B, B A, A B). A drift of the machine (another process, a
 * heap growing) then falls on every row alike instead of on whichever ran second, and no
 * row is always the one measured first in a round (on a busy machine that row came out
 * cheaper), so their ratio is the routes' own.
 */
export async function measureAlternating(specs: Spec[]): Promise<Figure[]> {
  process.stderr.write(`· in turns (${ROUNDS} rounds): ${specs.map((s) => s.name).join(" | ")}\n`);
  if (WARMUP > 0)
    for (const { opts, options } of specs)
      await autocannon({ ...opts, connections: options?.connections ?? CONNECTIONS, duration: WARMUP });
  const slices: Slice[][] = specs.map(() => []);
  const seconds = Math.max(1, Math.round(DURATION / ROUNDS));
  const order = [...specs.keys()];
  for (let round = 0; round < ROUNDS; round++)
    for (const i of round % 2 ? [...order].reverse() : order) {
      const spec = specs[i]!;
      const one = () => slice(spec, seconds, round === 0);
      slices[i]!.push(await (spec.around ? spec.around(one) : one()));
    }
  return specs.map((spec, i) => figureOf(spec.name, slices[i]!));
}
