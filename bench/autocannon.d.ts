declare module "autocannon" {
  interface Histogram {
    average: number;
    p50: number;
    p99: number;
    mean: number;
  }
  interface Result {
    requests: Histogram & { total: number };
    latency: Histogram;
    errors: number;
    timeouts: number;
    non2xx: number;
    "2xx": number;
    statusCodeStats?: Record<string, { count: number }>;
    /** Seconds the run took. */
    duration: number;
  }
  interface Options {
    url: string;
    connections?: number;
    duration?: number;
    /** Requests a second over all connections, at most. */
    overallRate?: number;
    timeout?: number;
    method?: string;
    headers?: Record<string, string>;
    body?: string;
    requests?: {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string;
      setupRequest?: (req: any) => any;
    }[];
  }
  /** A run under way: awaited for its result, or stopped early (it then resolves with what it measured). */
  type Instance = Promise<Result> & { stop(): void };
  function autocannon(opts: Options): Instance;
  export default autocannon;
}
