/**
 * Wrangler's switches for its local-only tooling, both off: its trace collector (a streaming
 * tail from every invocation, each Durable Object call's included, into a trace store in the
 * same workerd) and its data explorer (a wrapper around each SQLite-backed Durable Object
 * class). Production has neither, and the collector took about 40% of a POST's CPU and most
 * of a Durable Object RPC's (bench/RESULTS.md, 2026-11-29 07:50). The bench's load phases
 * and `npm run load`/`soak` run without them; the startup phase keeps them, as it times
 * `wrangler dev` as a developer starts it. See docs/performance.md, "How the Workers are
 * served".
 */
export const WITHOUT_LOCAL_TOOLING = { X_LOCAL_OBSERVABILITY: "false", X_LOCAL_EXPLORER: "false" } as const;
