// Runs every test file through vitest, guarded against a run that stops making progress.
// The local Workers runtime's test pool can stall between two files: the last file's
// results are printed, then nothing, for ever, with no error. A run that prints nothing
// for TEST_STALL_SECONDS (480 by default; the slowest file takes about a minute and the
// longest test timeout is 300 s) is stopped with its whole process group, and the files
// that have no results yet run again, up to two more times. Every file's results are kept
// as it ends (`scripts/test-results-reporter.ts`), so no result is run twice or lost, and
// a file that failed stays failed. A stalled pool is also idle: neither vitest nor anything it
// started uses the CPU. So a run that has printed nothing for TEST_IDLE_SECONDS (90) while all
// its processes together used under 2% of one core is stopped as stalled too, long before the
// stall time (no test waits that long on a timer alone; Linux, where /proc tells the CPU). A
// run that has run every test but does not exit within 15 s is stopped too, its results
// kept: "every test has run" is either vitest's own end of run or, when the pool stalls
// before vitest gets there, a result for every file it was given. Then the plain closing
// line and the quiet-run check.
//
//   node scripts/test-run.ts [filters]   (npm test runs it after lint and typecheck;
//                                        filters are vitest's, e.g. test/node)
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { appendFileSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { relative } from "node:path";
import type { FileResult } from "./test-results-reporter.ts";
import { readResults, summarize } from "./test-summary.ts";

const DIR = ".vitest";
const RESULTS = `${DIR}/results.jsonl`;
const OUTPUT = `${DIR}/output.log`;
const LIST = `${DIR}/files.json`;
const ENDED = `${DIR}/ended.json`;
/**
 * How long vitest may take to exit once every test has run; past it, the run is stopped as
 * ended. A run that exits does so within a few seconds of its last file; one held by a shared
 * runtime the pool never stops would wait for ever.
 */
const LINGER_MS = 15_000;
const STALL_MS = Number(process.env.TEST_STALL_SECONDS ?? 480) * 1000;
const IDLE_MS = Number(process.env.TEST_IDLE_SECONDS ?? 90) * 1000;
/** The share of one core under which a silent run counts as idle. */
const IDLE_SHARE = 0.02;
/** The first run, then reruns of what a stalled run left without results. */
const ATTEMPTS = 3;

export interface GuardedRun {
  status: number;
  stalled: boolean;
  /** It was stopped as stalled because it printed nothing and used no CPU for the idle time. */
  idle?: boolean;
  /** Every test had run, but the process was still there `lingerMs` later: it was stopped. */
  lingered?: boolean;
}

function signalGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  try {
    if (child.pid) process.kill(-child.pid, signal);
  } catch {
    // The group has already exited.
  }
}

/** Clock ticks per second of /proc's CPU times (USER_HZ, 100 on every Linux build in use). */
const TICK_MS = 10;

/**
 * The CPU time (ms) that the process `root` and every process descended from it have used,
 * counting the children they have already reaped; undefined where /proc is not there. A
 * detached child (its own group and session) still counts: descent is read from parent ids.
 */
export function treeCpuMs(root: number): number | undefined {
  let names: string[];
  try {
    names = readdirSync("/proc");
  } catch {
    return undefined;
  }
  const parent = new Map<number, number>();
  const ticks = new Map<number, number>();
  for (const name of names) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, "utf8");
    } catch {
      continue; // it ended while the list was read
    }
    // The command name, in parentheses, may hold spaces: fields are counted after it.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    parent.set(Number(name), Number(fields[1]));
    // utime, stime, cutime, cstime: fields 14 to 17 of the line, 12 to 15 after the name.
    ticks.set(
      Number(name),
      fields.slice(11, 15).reduce((n, f) => n + Number(f), 0),
    );
  }
  if (!ticks.has(root)) return undefined;
  const inTree = (pid: number): boolean => {
    for (let p: number | undefined = pid, hops = 0; p && hops < 64; p = parent.get(p), hops++)
      if (p === root) return true;
    return false;
  };
  let total = 0;
  for (const [pid, t] of ticks) if (inTree(pid)) total += t;
  return total * TICK_MS;
}

/** How the run went by its own note of its end, when it wrote one. */
function endedStatus(file: string): { status: number } | undefined {
  if (!existsSync(file)) return undefined;
  const { reason } = JSON.parse(readFileSync(file, "utf8")) as { reason?: string };
  return { status: reason === "passed" ? 0 : 1 };
}

/**
 * Runs a command in a process group of its own, copying what it prints to this process's
 * output and to `log`. Once it has printed nothing for `stallMs`, or for `idle.ms` while it
 * and its descendants used under `idle.share` of one core, the whole group (the runtimes it
 * started among it) is stopped: SIGTERM, then SIGKILL 5 s later.
 */
export function runGuarded(
  command: string,
  args: string[],
  opts: {
    stallMs: number;
    idle?: { ms: number; share: number };
    log?: string;
    env?: NodeJS.ProcessEnv;
    echo?: boolean;
    /**
     * Where the run notes that every test has run (`{ reason }`), and how long it may then take
     * to exit. `complete`, when given, tells from outside that every test has run (and how it
     * went) even when that note never comes.
     */
    ended?: { file: string; lingerMs: number; complete?: () => { status: number } | undefined };
  },
): Promise<GuardedRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
      env: opts.env ?? process.env,
    });
    let last = Date.now();
    let stalled = false;
    let idle = false;
    /** The tree's CPU time (ms) at each watch tick over the last idle window, oldest first. */
    const cpu: { at: number; ms: number }[] = [];
    let endedAt: number | undefined;
    let completed: { status: number } | undefined;
    let lingered: { status: number } | undefined;
    const copy = (chunk: Buffer) => {
      last = Date.now();
      if (opts.echo !== false) process.stdout.write(chunk);
      if (opts.log) appendFileSync(opts.log, chunk);
    };
    child.stdout.on("data", copy);
    child.stderr.on("data", copy);
    const forward = (signal: NodeJS.Signals) => () => {
      signalGroup(child, signal);
      process.exit(1);
    };
    const onInt = forward("SIGINT");
    const onTerm = forward("SIGTERM");
    process.once("SIGINT", onInt);
    process.once("SIGTERM", onTerm);
    const stop = () => {
      signalGroup(child, "SIGTERM");
      setTimeout(() => signalGroup(child, "SIGKILL"), 5_000).unref();
    };
    const watch = setInterval(
      () => {
        if (stalled || lingered) return;
        if (opts.ended && endedAt === undefined) {
          completed = existsSync(opts.ended.file) ? undefined : opts.ended.complete?.();
          if (completed || existsSync(opts.ended.file)) endedAt = Date.now();
        }
        if (opts.ended && endedAt !== undefined && Date.now() - endedAt >= opts.ended.lingerMs) {
          lingered = endedStatus(opts.ended.file) ?? completed ?? { status: 1 };
          stop();
          return;
        }
        const now = Date.now();
        if (opts.idle && child.pid) {
          const ms = treeCpuMs(child.pid);
          if (ms !== undefined) cpu.push({ at: now, ms });
          while (cpu.length > 1 && now - cpu[1]!.at >= opts.idle.ms) cpu.shift();
          const first = cpu[0];
          const quiet = now - last >= opts.idle.ms;
          if (
            quiet &&
            first &&
            now - first.at >= opts.idle.ms &&
            cpu.at(-1)!.ms - first.ms < opts.idle.share * (now - first.at)
          ) {
            stalled = idle = true;
            stop();
            return;
          }
        }
        if (now - last < opts.stallMs) return;
        stalled = true;
        stop();
      },
      Math.min(
        1_000,
        Math.max(50, Math.min(opts.stallMs, opts.idle?.ms ?? opts.stallMs, opts.ended?.lingerMs ?? opts.stallMs) / 4),
      ),
    );
    const done = () => {
      clearInterval(watch);
      process.off("SIGINT", onInt);
      process.off("SIGTERM", onTerm);
    };
    child.once("error", (err) => {
      done();
      reject(err);
    });
    child.once("exit", (code, signal) => {
      // What is still in the pipes is copied before the answer; a process left holding
      // them (started outside the group) does not hold the run.
      const drained = Promise.all(
        [child.stdout, child.stderr].map((s) => new Promise((r) => (s.readableEnded ? r(0) : s.once("end", r)))),
      );
      const late = new Promise((r) => setTimeout(r, 2_000).unref());
      void Promise.race([drained, late]).then(() => {
        done();
        child.stdout.destroy();
        child.stderr.destroy();
        if (lingered) resolve({ status: lingered.status, stalled: false, lingered: true });
        else resolve({ status: code ?? (signal ? 1 : 0), stalled, ...(idle ? { idle } : {}) });
      });
    });
  });
}

/** The files of `all` (paths relative to the root) that have no results yet. */
export function unreported(all: { project: string; file: string }[], results: FileResult[]): string[] {
  const seen = new Set(results.map((r) => `${r.project}\u0000${r.file}`));
  return all.filter((f) => !seen.has(`${f.project}\u0000${f.file}`)).map((f) => f.file);
}

/**
 * Whether every file of `expected` has its results in `path`, and then how they went; nothing
 * while one is missing (or a line is still being written).
 */
export function everyFileReported(
  expected: { project: string; file: string }[],
  path: string,
): { status: number } | undefined {
  let results: FileResult[];
  try {
    results = readResults(path);
  } catch {
    return undefined;
  }
  if (unreported(expected, results).length) return undefined;
  return { status: results.some((r) => r.failed || r.fileFailed) ? 1 : 0 };
}

/** Every test file of every project that the filters select, as vitest finds them (no test runs). */
function listFiles(filters: string[]): { project: string; file: string }[] {
  const listed = spawnSync("vitest", ["list", "--filesOnly", `--json=${LIST}`, ...filters], { encoding: "utf8" });
  if (listed.status !== 0) throw new Error(`vitest list failed:\n${listed.stdout}${listed.stderr}`);
  const files = JSON.parse(readFileSync(LIST, "utf8")) as { file: string; projectName: string }[];
  return files.map((f) => ({ project: f.projectName, file: relative(process.cwd(), f.file) }));
}

function say(line: string): void {
  const text = `\n${line}\n`;
  process.stdout.write(text);
  appendFileSync(OUTPUT, text);
}

async function main(filters: string[]): Promise<number> {
  mkdirSync(DIR, { recursive: true });
  for (const f of [RESULTS, OUTPUT, LIST, ENDED]) rmSync(f, { force: true });
  const env = { ...process.env, TEST_RESULTS_FILE: RESULTS, TEST_RUN_END_FILE: ENDED };
  const base = ["run", "--reporter=default", "--reporter=./scripts/test-results-reporter.ts"];
  const all = listFiles(filters);
  let files = filters;
  let expected = all;
  for (let attempt = 1; attempt <= ATTEMPTS; attempt++) {
    rmSync(ENDED, { force: true });
    const pending = expected;
    const ended = { file: ENDED, lingerMs: LINGER_MS, complete: () => everyFileReported(pending, RESULTS) };
    const run = await runGuarded("vitest", [...base, ...files], {
      stallMs: STALL_MS,
      idle: { ms: IDLE_MS, share: IDLE_SHARE },
      log: OUTPUT,
      env,
      ended,
    });
    if (run.lingered)
      say(`vitest ran every test but had not exited ${LINGER_MS / 1000} s later: it was stopped, its results kept.`);
    if (!run.stalled) return run.status;
    const results = readResults(RESULTS);
    expected = all.filter((f) => unreported([f], results).length);
    files = expected.map((f) => f.file);
    const why = run.idle
      ? `vitest printed nothing and used no CPU for ${IDLE_MS / 1000} s`
      : `vitest printed nothing for ${STALL_MS / 1000} s`;
    say(
      `${why}: the test pool stalled and was stopped. ` +
        `${files.length} file(s) have no results yet${files.length ? `: ${files.join(", ")}` : ""}.`,
    );
    if (!files.length) return 0;
    if (attempt === ATTEMPTS) {
      say(`The pool stalled ${ATTEMPTS} times; those files did not run to the end.`);
      return 1;
    }
    say(`Running those file(s) again (run ${attempt + 1} of at most ${ATTEMPTS}).`);
  }
  return 1;
}

if (import.meta.main) process.exit(summarize(RESULTS, await main(process.argv.slice(2)), OUTPUT));
