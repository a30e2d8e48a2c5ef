// BENCH_PROFILE=<dir>: a CPU profile and an allocation profile of the product Worker during
// each measured product row, taken through the inspector port of its dev server
// (bench/serve.ts opens one only then). Each is written as `<dir>/<row>.cpuprofile` and
// `<dir>/<row>.heapprofile` (open them in Chrome DevTools); the heaviest functions by self
// time and by bytes allocated are printed, so a slow row says where its JavaScript time
// goes, and what its garbage collector is given to do.
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount?: number;
}
interface HeapNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  children: HeapNode[];
}

/** Sampling every 16 KiB allocated on average, objects the collector has freed included: what a row allocates. */
const HEAP_SAMPLING = {
  samplingInterval: 16_384,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
};

interface Profile {
  nodes: ProfileNode[];
  samples?: number[];
  startTime: number;
  endTime: number;
}

export const PROFILE_DIR = process.env.BENCH_PROFILE || undefined;

/** Starts profiling every inspector target of `port`; the returned function stops and reports. */
export async function startProfile(port: number, name: string): Promise<() => Promise<void>> {
  const targets = (await (await fetch(`http://127.0.0.1:${port}/json`)).json()) as { webSocketDebuggerUrl?: string }[];
  const sessions = await Promise.all(
    targets.filter((t) => t.webSocketDebuggerUrl).map((t) => connect(t.webSocketDebuggerUrl!)),
  );
  for (const s of sessions) {
    await s.send("Profiler.enable");
    await s.send("Profiler.setSamplingInterval", { interval: 200 });
    await s.send("Profiler.start");
    await s.send("HeapProfiler.startSampling", HEAP_SAMPLING);
  }
  return async () => {
    const dir = PROFILE_DIR ?? ".";
    mkdirSync(dir, { recursive: true });
    for (const [i, s] of sessions.entries()) {
      const { profile } = (await s.send("Profiler.stop")) as { profile: Profile };
      const { profile: heap } = (await s.send("HeapProfiler.stopSampling")) as { profile: { head: HeapNode } };
      s.close();
      const base = join(dir, `${name.replace(/[^a-z0-9]+/gi, "-").slice(0, 60)}-${i}`);
      writeFileSync(`${base}.cpuprofile`, JSON.stringify(profile));
      writeFileSync(`${base}.heapprofile`, JSON.stringify(heap));
      report(profile, `${base}.cpuprofile`);
      reportAllocations(heap.head, `${base}.heapprofile`);
    }
  };
}

function report(profile: Profile, file: string) {
  const hits = new Map<number, number>();
  for (const id of profile.samples ?? []) hits.set(id, (hits.get(id) ?? 0) + 1);
  const total = profile.samples?.length ?? 0;
  const byFn = new Map<string, number>();
  for (const node of profile.nodes) {
    const n = hits.get(node.id) ?? node.hitCount ?? 0;
    if (!n) continue;
    const { functionName, url, lineNumber } = node.callFrame;
    const where = `${functionName || "(anonymous)"} ${url.split("/").slice(-2).join("/")}:${lineNumber + 1}`;
    byFn.set(where, (byFn.get(where) ?? 0) + n);
  }
  const idle = byFn.get("(idle) :0") ?? 0;
  process.stderr.write(
    `\n  profile ${file}: ${total} samples, ${(((total - idle) / Math.max(total, 1)) * 100).toFixed(0)}% busy\n`,
  );
  for (const [where, n] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 30))
    process.stderr.write(`  ${((n / Math.max(total, 1)) * 100).toFixed(1).padStart(5)}%  ${where}\n`);
}

/** The functions that allocated the most bytes themselves, with the row's total. */
function reportAllocations(head: HeapNode, file: string) {
  const bySite = new Map<string, number>();
  let total = 0;
  const pending = [head];
  for (let node = pending.pop(); node; node = pending.pop()) {
    total += node.selfSize;
    if (node.selfSize) {
      const where = `${node.callFrame.functionName || "(anonymous)"} ${node.callFrame.url.split("/").slice(-2).join("/")}:${node.callFrame.lineNumber + 1}`;
      bySite.set(where, (bySite.get(where) ?? 0) + node.selfSize);
    }
    pending.push(...node.children);
  }
  process.stderr.write(`\n  allocations ${file}: ${(total / 2 ** 20).toFixed(1)} MiB sampled\n`);
  for (const [where, bytes] of [...bySite].sort((a, b) => b[1] - a[1]).slice(0, 15))
    process.stderr.write(`  ${((bytes / Math.max(total, 1)) * 100).toFixed(1).padStart(5)}%  ${where}\n`);
}

function connect(url: string): Promise<{ send: (method: string, params?: object) => Promise<unknown>; close(): void }> {
  // The inspector proxy accepts local origins only; Node sends none of its own.
  const ws = new WebSocket(url, { headers: { origin: "http://127.0.0.1" } } as unknown as string[]);
  let next = 1;
  const waiting = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  ws.addEventListener("message", (ev) => {
    const msg = JSON.parse(String(ev.data)) as { id?: number; result?: unknown; error?: { message: string } };
    const w = msg.id === undefined ? undefined : waiting.get(msg.id);
    if (!w) return;
    waiting.delete(msg.id!);
    if (msg.error) w.reject(new Error(msg.error.message));
    else w.resolve(msg.result);
  });
  return new Promise((resolve, reject) => {
    ws.addEventListener("error", () => reject(new Error(`inspector ${url} refused the connection`)));
    ws.addEventListener("open", () =>
      resolve({
        send: (method, params = {}) =>
          new Promise((res, rej) => {
            const id = next++;
            waiting.set(id, { resolve: res, reject: rej });
            ws.send(JSON.stringify({ id, method, params }));
          }),
        close: () => ws.close(),
      }),
    );
  });
}
