// Sends oversized bodies to a running local Worker and reports the memory of its workerd
// processes, to show that a body above a route's limit is refused while it streams in
// instead of being buffered. It starts nothing: run `npm run dev` first (PORT=8799 npm run
// dev for another port) and pass the sandbox key it prints.
//
//   node scripts/oversized-bodies.ts --key sk_test_… [--url http://127.0.0.1:8787]
//        [--path /api/v1/listings] [--count 4] [--mb 60] [--mode both|length|chunked]
//
// `length` bodies declare their size (Content-Length); `chunked` bodies do not, so the
// Worker can only refuse them by counting bytes as they arrive.

import { execFileSync } from "node:child_process";
import { readFileSync, readlinkSync } from "node:fs";

const MAX_COUNT = 16;
const MAX_MB = 512;
const REQUEST_TIMEOUT_MS = 60_000;
const SAMPLE_EVERY_MS = 100;
const CHUNK = 1024 * 1024;

function option(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1]! : fallback;
}

const base = option("url", process.env.ALMS_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const key = option("key", process.env.ALMS_KEY ?? "");
const path = option("path", "/api/v1/listings");
const count = Math.min(MAX_COUNT, Math.max(1, Number(option("count", "4")) || 4));
const mb = Math.min(MAX_MB, Math.max(1, Number(option("mb", "60")) || 60));
const mode = option("mode", "both");
const cwd = option("cwd", process.cwd());

/** The workerd processes started from this project (other checkouts run their own). */
function workerdPids(): number[] {
  let out = "";
  try {
    out = execFileSync("pgrep", ["-f", "workerd"], { encoding: "utf8" });
  } catch {
    return [];
  }
  return out
    .split("\n")
    .map(Number)
    .filter((pid) => pid > 0 && pid !== process.pid)
    .filter((pid) => {
      try {
        const exe = readlinkSync(`/proc/${pid}/exe`);
        return /workerd/.test(exe) && readlinkSync(`/proc/${pid}/cwd`).startsWith(cwd);
      } catch {
        return false;
      }
    });
}

/** Resident memory in KiB, from /proc/<pid>/status. */
function rssKiB(pid: number): number {
  try {
    const m = /^VmRSS:\s+(\d+)\s+kB/m.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
    return m ? Number(m[1]) : 0;
  } catch {
    return 0;
  }
}

const totalRss = (pids: number[]) => pids.reduce((sum, pid) => sum + rssKiB(pid), 0);
const mib = (kib: number) => `${(kib / 1024).toFixed(1)} MiB`;

/** A body of `bytes` spaces, produced one chunk at a time as the connection takes it. */
function chunkedBody(bytes: number) {
  let sent = 0;
  const stream = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (sent >= bytes) return controller.close();
      const n = Math.min(CHUNK, bytes - sent);
      sent += n;
      controller.enqueue(new Uint8Array(n).fill(0x20));
    },
  });
  return { stream, sent: () => sent };
}

async function send(kind: "length" | "chunked", bytes: number) {
  const started = Date.now();
  const headers = {
    "Content-Type": "application/json",
    "X-API-Key": key,
    "X-Idempotency-Key": crypto.randomUUID(),
  };
  const chunked = kind === "chunked" ? chunkedBody(bytes) : undefined;
  const body = chunked ? chunked.stream : new Uint8Array(bytes).fill(0x20);
  try {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers,
      body,
      duplex: "half",
      signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    } as RequestInit);
    const text = await res.text();
    const code = /"code":"([^"]+)"/.exec(text)?.[1] ?? "";
    const limit = /"limit_bytes":(\d+)/.exec(text)?.[1];
    await chunked?.stream.cancel().catch(() => {});
    return {
      kind,
      status: String(res.status),
      code,
      limit,
      ms: Date.now() - started,
      sent: chunked ? chunked.sent() : bytes,
    };
  } catch (err) {
    // An HTTP/1.1 client still writing when the server answers and closes sees EPIPE or a
    // closed socket instead of the answer: the Worker refused the body before reading the rest.
    const reason = err instanceof Error ? ((err.cause as Error)?.message ?? err.message) : String(err);
    return {
      kind,
      status: `closed by the server (${reason})`,
      code: "",
      limit: undefined,
      ms: Date.now() - started,
      sent: chunked ? chunked.sent() : bytes,
    };
  }
}

async function main() {
  if (!key) throw new Error("Pass the sandbox key that `npm run dev` printed: --key sk_test_… (or ALMS_KEY).");
  const probe = await fetch(`${base}/api/v1/users`, {
    headers: { "X-API-Key": key },
    signal: AbortSignal.timeout(10_000),
  });
  if (probe.status !== 200) throw new Error(`${base} answered ${probe.status} to GET /api/v1/users with that key.`);
  const pids = workerdPids();
  if (!pids.length) throw new Error(`No workerd process started from ${cwd} was found (pgrep -f workerd).`);
  const kinds: ("length" | "chunked")[] = mode === "both" ? ["length", "chunked"] : [mode as "length" | "chunked"];
  const bytes = mb * 1024 * 1024;
  console.log(`workerd pids from ${cwd}: ${pids.join(", ")}`);
  for (const kind of kinds) {
    const before = totalRss(pids);
    let peak = before;
    const sampler = setInterval(() => {
      peak = Math.max(peak, totalRss(pids));
    }, SAMPLE_EVERY_MS);
    const started = Date.now();
    const results = await Promise.all(Array.from({ length: count }, () => send(kind, bytes)));
    clearInterval(sampler);
    await new Promise((r) => setTimeout(r, 500));
    const after = totalRss(pids);
    console.log(`\n${count} parallel ${mb} MB ${kind} bodies to POST ${path} (${Date.now() - started} ms):`);
    for (const r of results)
      console.log(
        `  ${r.status} ${r.code}${r.limit ? ` limit_bytes=${r.limit}` : ""} in ${r.ms} ms; ` +
          `client produced ${(r.sent / 1024 / 1024).toFixed(1)} MiB`,
      );
    console.log(`  workerd RSS before ${mib(before)}, peak ${mib(peak)}, after ${mib(after)}`);
    console.log(`  per process after: ${pids.map((pid) => `${pid} ${mib(rssKiB(pid))}`).join(", ")}`);
  }
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
