// Child processes and temporary state of a bench run. Every child runs in its own
// process group, so stopping it also stops what it started (workerd); whatever is still
// running when the bench exits, for any reason, is killed, and the state directory goes.
import { type ChildProcess, spawn } from "node:child_process";
import { closeSync, existsSync, mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

export const stateDir = mkdtempSync(join(tmpdir(), "alms-bench-"));
/** Wrangler's own logs and dev registry stay in the state directory too, apart from other dev sessions. */
const childEnv = {
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
  DO_NOT_TRACK: "1",
  WRANGLER_LOG_PATH: join(stateDir, "wrangler-logs"),
  WRANGLER_REGISTRY_PATH: join(stateDir, "registry"),
};

const children = new Set<ChildProcess>();

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

function signalGroup(child: ChildProcess, signal: NodeJS.Signals) {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // already gone
  }
}

/** Starts `command` in its own process group, its output going to a log file in the state directory. */
function startChild(command: string, args: string[], logName: string, env: Record<string, string> = {}): ChildProcess {
  const log = openSync(logFile(logName), "a");
  const child = spawn(command, args, { env: { ...childEnv, ...env }, stdio: ["ignore", log, log], detached: true });
  closeSync(log);
  children.add(child);
  child.on("exit", () => children.delete(child));
  return child;
}

const logFile = (name: string) => join(stateDir, `${name}.log`);

/** How many bytes a child's log holds now: where a later `logSince` starts. */
export const logSize = (name: string) => (existsSync(logFile(name)) ? statSync(logFile(name)).size : 0);

/** What a child logged from byte `offset` on (at most 64 MiB of it). */
export function logSince(name: string, offset: number): string {
  const file = logFile(name);
  if (!existsSync(file)) return "";
  const length = Math.min(64 * 1024 * 1024, Math.max(0, statSync(file).size - offset));
  const bytes = Buffer.alloc(length);
  const fd = openSync(file, "r");
  try {
    readSync(fd, bytes, 0, length, offset);
  } finally {
    closeSync(fd);
  }
  return bytes.toString("utf8");
}

/** The first and last lines of a child's log, for an error message. */
function logTail(name: string, lines = 15): string {
  const file = logFile(name);
  if (!existsSync(file)) return "";
  const all = readFileSync(file, "utf8").trimEnd().split("\n");
  if (all.length <= 2 * lines) return all.join("\n");
  return [...all.slice(0, lines), `[… ${all.length - 2 * lines} lines …]`, ...all.slice(-lines)].join("\n");
}

const TERMINAL_COLOURS = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, "g");

/** The distinct error lines a child logged (the Worker's console.error, uncaught exceptions), with counts. */
export function errorLines(name: string): Map<string, number> {
  const file = logFile(name);
  const found = new Map<string, number>();
  if (!existsSync(file)) return found;
  for (const raw of readFileSync(file, "utf8").split("\n")) {
    const line = raw.replace(TERMINAL_COLOURS, "").trim();
    if (!/\[ERROR\]|"level":"error"|Uncaught|Error:/.test(line) || /ENOTFOUND workers\.cloudflare\.com/.test(line))
      continue;
    const key = line.replace(/req_[0-9a-z]+|evt_[0-9a-z]+|whd_[0-9a-z]+/g, "…").slice(0, 200);
    found.set(key, (found.get(key) ?? 0) + 1);
  }
  return found;
}

/** Runs a command to completion within `timeoutMs`; refuses a non-zero exit. */
export async function runChild(command: string, args: string[], logName: string, timeoutMs: number): Promise<void> {
  const child = startChild(command, args, logName);
  const code = await new Promise<number | string | null>((resolve) => {
    const timer = setTimeout(() => {
      signalGroup(child, "SIGKILL");
      resolve("timeout");
    }, timeoutMs);
    child.on("exit", (c, signal) => {
      clearTimeout(timer);
      resolve(c ?? signal);
    });
    child.on("error", (err) => {
      clearTimeout(timer);
      resolve(err.message);
    });
  });
  if (code !== 0) {
    const why = code === "timeout" ? `did not finish within ${timeoutMs / 1000} s` : `ended with ${code}`;
    throw new Error(`${command} ${args.slice(0, 3).join(" ")} … ${why}:\n${logTail(logName)}`);
  }
}

/** Interrupts every running child, then kills what is left after `graceMs`. */
export async function stopChildren(graceMs = 5_000): Promise<void> {
  for (const child of children) signalGroup(child, "SIGINT");
  const deadline = Date.now() + graceMs;
  while (children.size && Date.now() < deadline) await sleep(100);
  for (const child of children) signalGroup(child, "SIGKILL");
}

/** Stops one server started by `startServer` (its whole process group) and waits for it. */
export async function stopServer(child: ChildProcess, graceMs = 5_000): Promise<void> {
  signalGroup(child, "SIGINT");
  const deadline = Date.now() + graceMs;
  while (!exited(child) && Date.now() < deadline) await sleep(50);
  signalGroup(child, "SIGKILL");
  while (!exited(child) && Date.now() < deadline + graceMs) await sleep(50);
}

/** The synchronous last resort: kill everything and remove the state directory. */
export function cleanupNow() {
  for (const child of children) signalGroup(child, "SIGKILL");
  if (!process.env.BENCH_KEEP_STATE) rmSync(stateDir, { recursive: true, force: true });
}

process.on("exit", cleanupNow);

const exited = (child: ChildProcess) => child.exitCode !== null || child.signalCode !== null;

/**
 * Polls `url` until it answers below 500, for at most `timeoutMs`, or until `child` has
 * exited; a function gives the address once the server has said it (undefined until then).
 */
async function waitForHttp(
  url: string | (() => string | undefined),
  timeoutMs: number,
  child?: ChildProcess,
  logName?: string,
  pollMs = 250,
) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (child && exited(child)) {
      throw new Error(
        `the server for ${typeof url === "string" ? url : logName} exited (${child.exitCode ?? child.signalCode}):\n${logTail(logName ?? "")}`,
      );
    }
    const known = typeof url === "string" ? url : url();
    if (known === undefined) {
      await sleep(pollMs);
      continue;
    }
    try {
      const res = await fetch(known, { signal: AbortSignal.timeout(5_000) });
      await res.body?.cancel();
      if (res.status < 500) return;
    } catch {
      // not listening yet
    }
    await sleep(pollMs);
  }
  const what = typeof url === "string" ? url : (url() ?? `the server of ${logName}`);
  throw new Error(`${what} did not come up within ${timeoutMs / 1000} s${logName ? `:\n${logTail(logName)}` : ""}`);
}

/**
 * Starts a server and waits until `url` answers; a server that dies while starting (a
 * loaded machine sometimes crashes the bundler) is started once more.
 */
export async function startServer(
  command: string,
  args: string[],
  logName: string,
  url: string | (() => string | undefined),
  timeoutMs: number,
  pollMs?: number,
  env?: Record<string, string>,
) {
  for (let attempt = 1; ; attempt++) {
    const child = startChild(command, args, logName, env);
    try {
      await waitForHttp(url, timeoutMs, child, logName, pollMs);
      return child;
    } catch (err) {
      if (!exited(child) || attempt >= 2) throw err;
      process.stderr.write(`! ${logName} exited while starting; starting it again\n`);
    }
  }
}
