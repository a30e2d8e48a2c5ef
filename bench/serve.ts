// One Worker for the bench, started through wrangler's own programmatic dev server
// (the same configuration file, bundling, bindings and local state as `wrangler dev`)
// with no inspector, and answered on the port of the workerd that runs it rather than
// through wrangler's proxy. `wrangler dev` always opens an inspector on that workerd and
// keeps it attached with the Runtime domain enabled, so every console line is also
// serialized for DevTools in the Worker's process, sent to the proxy's workerd and posted
// from there to wrangler's Node process; production has none of that. Here a console line
// costs the Worker what workerd's own console costs (formatting it and writing it to
// stdout, which this process reads and drops unless it is a warning or an error).
//
// Nor does it run wrangler's other local-only tooling, its trace collector and its data
// explorer (bench/lib/local-tooling.ts says what they are and cost).
//
// Started by bench/lib/processes.ts with one JSON argument: { config?, persist, vars,
// readyFile, inspectorPort? }. Once the Worker answers, it writes { origin } (the
// workerd's own address) to readyFile; SIGINT or SIGTERM disposes of it.
import { writeFileSync } from "node:fs";
import { unstable_DevEnv } from "wrangler";
import { WITHOUT_LOCAL_TOOLING } from "./lib/local-tooling.ts";

interface ServeOptions {
  config?: string;
  persist: string;
  vars: Record<string, string>;
  readyFile: string;
  /** Only for BENCH_PROFILE, which profiles through the inspector. */
  inspectorPort?: number;
}

const options = JSON.parse(process.argv[2] ?? "{}") as ServeOptions;
Object.assign(process.env, WITHOUT_LOCAL_TOOLING);
const devEnv = new unstable_DevEnv();
const direct = new Promise<string>((resolve) => {
  devEnv.on("reloadComplete", (event: { proxyData: { userWorkerUrl: { hostname?: string; port?: string } } }) => {
    const { hostname, port } = event.proxyData.userWorkerUrl;
    resolve(`http://${hostname}:${port}`);
  });
});

const worker = await devEnv.startWorker({
  config: options.config,
  bindings: Object.fromEntries(
    Object.entries(options.vars).map(([name, value]) => [name, { type: "plain_text" as const, value }]),
  ),
  dev: {
    server: { hostname: "127.0.0.1" },
    inspector: options.inspectorPort ? { hostname: "127.0.0.1", port: options.inspectorPort } : false,
    persist: options.persist,
    logLevel: "warn",
    watch: false,
    structuredLogsHandler: ({ level, message }: { level: string; message: string }) => {
      if (level === "warn" || level === "error") process.stderr.write(`${message}\n`);
    },
  },
});
await worker.ready;
writeFileSync(options.readyFile, JSON.stringify({ origin: await direct }));

let stopping = false;
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => {
    if (stopping) return;
    stopping = true;
    worker.dispose().finally(() => process.exit(0));
  });
}
