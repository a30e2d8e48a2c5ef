// One measured row: autocannon against one route after a warm-up.
import autocannon from "autocannon";

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
  if (WARMUP > 0) await autocannon({ ...opts, connections, duration: WARMUP });
  const r = await autocannon({ ...opts, connections, duration: DURATION });
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
  };
}
