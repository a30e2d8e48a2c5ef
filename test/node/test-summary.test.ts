import { spawnSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { groupTimes, noise } from "../../scripts/test-summary.ts";

// Lines that runs of this suite printed, one of each kind of noise.
const NOISY = [
  "uncaught exception; source = Uncaught (in promise); stack = Error: Network connection lost.",
  "uncaught exception; exception = workerd/jsg/value.h:1511: failed: jsg.Error: internal error; reference = 7lrd",
  "exception = kj/async-io.c++:763: disconnected: read end of pipe was aborted",
  "e = rust/worker/ffi.rs:110: failed: failed to lookup address information: Name or service not known",
  "console warning; message = Called .text() on an HTTP body which does not appear to be text. " +
    'The body\'s Content-Type is "application/x-www-form-urlencoded".',
  '{"level":"error","job":"outbox_drain","error":"Error: queue down"}',
  '{"level":"warn","request_id":"req_1","path":"/api/v1/listings","error":"Error: Durable Object is overloaded."}',
  "stderr | test/contract/wire.test.ts > unexpected failures > are internal_error in the envelope, with no stack or internals",
  'Sourcemap for "/work/main/node_modules/stripe/esm/Webhooks.js" points to missing source files',
  "Unhandled Rejection",
  "\u001b[33mwarning:\u001b[39m the `poolOptions` option is deprecated",
];

// Lines of a quiet run: the reporter's own, informational logs, and test names that mention errors.
const QUIET = [
  " \u001b[32m✓\u001b[39m  workers  test/contract/wire.test.ts (20 tests) 1162ms",
  "     ✓ are internal_error in the envelope, with no stack or internals 12ms",
  "     ✓ an uncaught exception in a consumer is retried 40ms",
  "stdout | test/keys-and-auth/auth.test.ts > key states > rotation: the nightly sweep deactivates it",
  '{"job":"rotation_sweep","keys":1}',
  "seed 20261123: 1200 requests, statuses 200×280 422×460",
  "Using secrets defined in .dev.vars",
  "      Tests  822 passed | 5 skipped (827)",
];

describe("the quiet-run check of npm test", () => {
  it("flags every kind of noise a run printed", () => {
    for (const line of NOISY) expect(noise(line), line).toHaveLength(1);
  });

  it("leaves the reporter's lines and informational logs alone", () => {
    expect(noise(QUIET.join("\n"))).toEqual([]);
  });

  it("fails the run, with the lines listed, when the tests passed but the output was noisy", () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-summary-"));
    const results = join(dir, "results.jsonl");
    const file = (name: string, passed: number) =>
      JSON.stringify({ project: "node", file: name, passed, failed: 0, skipped: 0, fileFailed: false });
    writeFileSync(results, `${file("test/node/a.test.ts", 1)}\n${file("test/node/b.test.ts", 2)}\n`);
    const run = (output: string) => {
      writeFileSync(join(dir, "output.log"), output);
      return spawnSync(process.execPath, ["scripts/test-summary.ts", results, "0", join(dir, "output.log")], {
        encoding: "utf8",
      });
    };
    const quiet = run(QUIET.join("\n"));
    expect(quiet.status, quiet.stdout).toBe(0);
    expect(quiet.stdout).toContain("3 passed, 0 failed, 0 skipped");
    const noisy = run([...QUIET, NOISY[0]].join("\n"));
    expect(noisy.status, noisy.stdout).toBe(1);
    expect(noisy.stdout).toContain("The run was not quiet: 1 line(s) of noise.");
    expect(noisy.stdout).toContain("uncaught error: uncaught exception; source = Uncaught (in promise)");
  });

  it("names each failed test with its error, for a run stopped before vitest's own summary", () => {
    const dir = mkdtempSync(join(tmpdir(), "alms-summary-"));
    const results = join(dir, "results.jsonl");
    const failed = {
      project: "workers",
      file: "test/contract/mirror.test.ts",
      passed: 0,
      failed: 1,
      skipped: 0,
      fileFailed: false,
      failures: [{ test: "the mirror > ends equal", error: "AssertionError: expected 3 to be 4" }],
    };
    writeFileSync(results, `${JSON.stringify(failed)}\n`);
    const run = spawnSync(process.execPath, ["scripts/test-summary.ts", results, "0"], { encoding: "utf8" });
    expect(run.status).toBe(1);
    expect(run.stdout).toContain("FAILED test/contract/mirror.test.ts > the mirror > ends equal");
    expect(run.stdout).toContain("AssertionError: expected 3 to be 4");
  });
});

describe("the time per group of test files", () => {
  it("adds each group's files up, slowest group first, and names its slowest file", () => {
    const file = (project: string, path: string, durationMs: number) => ({
      project,
      file: path,
      passed: 1,
      failed: 0,
      skipped: 0,
      fileFailed: false,
      durationMs,
    });
    const lines = groupTimes([
      file("workers", "test/webhooks/a.test.ts", 1_000),
      file("node", "test/node/x.test.ts", 500),
      file("workers-shared", "test/webhooks/b.test.ts", 4_000),
      file("workers", "test/webhooks/c.test.ts", 2_500),
      file("node", "test/node/y.test.ts", 700),
    ]);
    expect(lines).toEqual([
      "   4.0 s  workers-shared test/webhooks (1 file; slowest b.test.ts, 4.0 s)",
      "   3.5 s  workers test/webhooks (2 files; slowest c.test.ts, 2.5 s)",
      "   1.2 s  node (2 files; slowest y.test.ts, 0.7 s)",
    ]);
  });
});
