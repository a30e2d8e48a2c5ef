import { spawnSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { FileResult } from "../../scripts/test-results-reporter.ts";
import { everyFileReported, runGuarded, treeCpuMs, unreported } from "../../scripts/test-run.ts";
import { totals } from "../../scripts/test-summary.ts";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

const result = (file: string, counts: Partial<FileResult> = {}): FileResult => ({
  project: "workers",
  file,
  passed: 1,
  failed: 0,
  skipped: 0,
  fileFailed: false,
  ...counts,
});

describe("the guard around the test run", () => {
  it("stops a run that prints nothing for the stall time, with every process of its group", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const pidFile = join(dir, "child.pid");
    // A runner that prints, starts a helper in its group, then hangs without a word.
    const script = [
      "const { spawn } = require('node:child_process');",
      "const helper = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });",
      `require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(helper.pid));`,
      "console.log('first file done');",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const log = join(dir, "output.log");
    const started = Date.now();
    const run = await runGuarded(process.execPath, ["-e", script], { stallMs: 400, log, echo: false });
    expect(run.stalled).toBe(true);
    expect(run.status).not.toBe(0);
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(readFileSync(log, "utf8")).toContain("first file done");
    const helper = Number(readFileSync(pidFile, "utf8"));
    await expect.poll(() => alive(helper), { timeout: 8_000 }).toBe(false);
  });

  it("lets a run that keeps printing finish, with its own exit status and all it printed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const log = join(dir, "output.log");
    // Ten lines 100 ms apart: quiet for less than the stall time at every point, longer than it in all.
    const script =
      "let n = 0; const t = setInterval(() => { console.log('file ' + ++n); if (n === 10) { clearInterval(t); process.exitCode = 3; } }, 100);";
    const run = await runGuarded(process.execPath, ["-e", script], { stallMs: 400, log, echo: false });
    expect(run).toEqual({ status: 3, stalled: false });
    expect(readFileSync(log, "utf8").match(/^file \d+$/gm)).toHaveLength(10);
  });

  it("stops a silent run as stalled once it and its children have been idle for the idle time", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const log = join(dir, "output.log");
    const pidFile = join(dir, "child.pid");
    // A runner that prints once, then waits on a detached child that only sleeps: all idle.
    const script = [
      "const { spawn } = require('node:child_process');",
      "const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore', detached: true });",
      `require('node:fs').writeFileSync(${JSON.stringify(pidFile)}, String(c.pid));`,
      "console.log('first file done');",
      "setInterval(() => {}, 1000);",
    ].join("\n");
    const started = Date.now();
    const run = await runGuarded(process.execPath, ["-e", script], {
      stallMs: 60_000,
      idle: { ms: 1_500, share: 0.05 },
      log,
      echo: false,
    });
    // The detached child is outside the group the guard stops.
    process.kill(Number(readFileSync(pidFile, "utf8")), "SIGKILL");
    expect(run).toMatchObject({ stalled: true, idle: true });
    expect(Date.now() - started).toBeLessThan(15_000);
  });

  it("lets a silent run go on while a child it started keeps a core busy", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const log = join(dir, "output.log");
    // Silent for 4 s, three idle windows, while a detached child (another group and session) computes.
    const busy = "const end = Date.now() + 4000; while (Date.now() < end) {}";
    const script = [
      "const { spawn } = require('node:child_process');",
      `const c = spawn(process.execPath, ['-e', ${JSON.stringify(busy)}], { stdio: 'ignore', detached: true });`,
      "c.on('exit', () => { console.log('done'); process.exitCode = 4; });",
    ].join("\n");
    const run = await runGuarded(process.execPath, ["-e", script], {
      stallMs: 60_000,
      idle: { ms: 1_200, share: 0.05 },
      log,
      echo: false,
    });
    expect(run).toEqual({ status: 4, stalled: false });
    expect(readFileSync(log, "utf8")).toContain("done");
  });

  it("counts the CPU of a process and everything descended from it", () => {
    // Off Linux there is no /proc, and the guard falls back to the stall time alone.
    if (!existsSync("/proc/self/stat")) return expect(treeCpuMs(process.pid)).toBeUndefined();
    const before = treeCpuMs(process.pid)!;
    const end = Date.now() + 300;
    while (Date.now() < end) {}
    expect(treeCpuMs(process.pid)! - before).toBeGreaterThanOrEqual(150);
    // A child's work counts once it has been reaped too (cutime).
    const child = spawnSync(process.execPath, ["-e", "const e = Date.now() + 300; while (Date.now() < e) {}"]);
    expect(child.status).toBe(0);
    expect(treeCpuMs(process.pid)! - before).toBeGreaterThanOrEqual(350);
    expect(treeCpuMs(2 ** 22 + 1)).toBeUndefined();
  });

  it("runs again exactly the files with no results, and keeps a failure already recorded", () => {
    const all = ["a", "b", "c", "d"].map((f) => ({ project: "workers", file: `test/${f}.test.ts` }));
    const done = [result("test/a.test.ts"), result("test/c.test.ts", { passed: 0, failed: 2 })];
    expect(unreported(all, done)).toEqual(["test/b.test.ts", "test/d.test.ts"]);
    // The same path in another project is another file.
    expect(unreported([{ project: "node", file: "test/a.test.ts" }], done)).toEqual(["test/a.test.ts"]);
    const after = [...done, result("test/b.test.ts"), result("test/d.test.ts", { fileFailed: true, passed: 0 })];
    expect(unreported(all, after)).toEqual([]);
    expect(totals(after)).toEqual({ passed: 2, failed: 3, skipped: 0 });
  });

  it("fails the summary of a run whose results hold a failure, even when the status was 0", () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const results = join(dir, "results.jsonl");
    writeFileSync(results, `${JSON.stringify(result("test/a.test.ts", { failed: 1 }))}\n`);
    const summary = spawnSync(process.execPath, ["scripts/test-summary.ts", results, "0"], { encoding: "utf8" });
    expect(summary.status).toBe(1);
    expect(summary.stdout).toContain("1 passed, 1 failed, 0 skipped");
  });
});

describe("a run that has run every test but does not exit", () => {
  it("is stopped once it has lingered, with the status its end noted and its group gone", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const ended = join(dir, "ended.json");
    // A runner that notes its end, then keeps printing (so it never looks stalled) and never exits.
    const script = [
      `require('node:fs').writeFileSync(${JSON.stringify(ended)}, JSON.stringify({ reason: 'passed' }));`,
      "setInterval(() => console.log('background work'), 50);",
    ].join("\n");
    const started = Date.now();
    const run = await runGuarded(process.execPath, ["-e", script], {
      stallMs: 60_000,
      echo: false,
      ended: { file: ended, lingerMs: 300 },
    });
    expect(run).toEqual({ status: 0, stalled: false, lingered: true });
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it("keeps a failed run failed", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const ended = join(dir, "ended.json");
    const script = `require('node:fs').writeFileSync(${JSON.stringify(ended)}, JSON.stringify({ reason: 'failed' })); setInterval(() => {}, 1000);`;
    const run = await runGuarded(process.execPath, ["-e", script], {
      stallMs: 60_000,
      echo: false,
      ended: { file: ended, lingerMs: 300 },
    });
    expect(run).toEqual({ status: 1, stalled: false, lingered: true });
  });

  it("is stopped when every file has its results though vitest never notes its end", async () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const results = join(dir, "results.jsonl");
    const expected = ["a", "b"].map((f) => ({ project: "workers", file: `test/${f}.test.ts` }));
    // A runner that writes each file's results, then keeps printing and never exits nor notes its end.
    const lines = [result("test/a.test.ts"), result("test/b.test.ts", { passed: 2, failed: 1 })]
      .map((r) => `${JSON.stringify(r)}\n`)
      .join("");
    const script = [
      `setTimeout(() => require('node:fs').appendFileSync(${JSON.stringify(results)}, ${JSON.stringify(lines)}), 200);`,
      "setInterval(() => console.log('background work'), 50);",
    ].join("\n");
    const run = await runGuarded(process.execPath, ["-e", script], {
      stallMs: 60_000,
      echo: false,
      ended: {
        file: join(dir, "ended.json"),
        lingerMs: 300,
        complete: () => everyFileReported(expected, results),
      },
    });
    expect(run).toEqual({ status: 1, stalled: false, lingered: true });
  });

  it("counts a run complete only once each file it was given has a result", () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-run-"));
    const results = join(dir, "results.jsonl");
    const expected = ["a", "b"].map((f) => ({ project: "workers", file: `test/${f}.test.ts` }));
    expect(everyFileReported(expected, results)).toBeUndefined();
    writeFileSync(results, `${JSON.stringify(result("test/a.test.ts"))}\n{"project":"work`);
    expect(everyFileReported(expected, results)).toBeUndefined();
    writeFileSync(results, `${JSON.stringify(result("test/a.test.ts"))}\n`);
    expect(everyFileReported(expected, results)).toBeUndefined();
    writeFileSync(
      results,
      [result("test/a.test.ts"), result("test/b.test.ts")].map((r) => JSON.stringify(r)).join("\n"),
    );
    expect(everyFileReported(expected, results)).toEqual({ status: 0 });
  });
});
