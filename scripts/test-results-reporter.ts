// A vitest reporter that appends one JSON line per test file as soon as the file ends:
// its project, its path and how many of its tests passed, failed and were skipped. Unlike
// vitest's JSON report, written once the whole run ends, these lines survive a run that is
// stopped partway, so `scripts/test-run.ts` knows which files have their results and
// which must run again. The file is named by TEST_RESULTS_FILE.
import { appendFileSync, writeFileSync } from "node:fs";
import type { Reporter, TestModule, TestRunEndReason } from "vitest/node";

/** One finished test file, as the reporter writes it. */
export interface FileResult {
  project: string;
  file: string;
  passed: number;
  failed: number;
  skipped: number;
  /** The file itself failed (an import, a hook) beyond the tests counted as failed. */
  fileFailed: boolean;
  /** How long the file took, its set-up and its tests together (ms). */
  durationMs?: number;
  /** Each failed test's name and first error, so a run stopped before vitest's own summary still says why. */
  failures?: { test: string; error: string }[];
}

/** The most of an error's message and stack kept per failed test. */
const ERROR_CHARS = 2_000;

export default class TestResultsReporter implements Reporter {
  readonly #path = process.env.TEST_RESULTS_FILE;
  readonly #endPath = process.env.TEST_RUN_END_FILE;

  /** Notes that every test has run, and how the run went, for a guard waiting on the process to exit. */
  onTestRunEnd(_modules: readonly TestModule[], _errors: readonly unknown[], reason: TestRunEndReason): void {
    if (this.#endPath) writeFileSync(this.#endPath, JSON.stringify({ reason }));
  }

  onTestModuleEnd(module: TestModule): void {
    if (!this.#path) return;
    const result: FileResult = {
      project: module.project.name,
      file: module.relativeModuleId,
      passed: 0,
      failed: 0,
      skipped: 0,
      fileFailed: false,
    };
    const failures: { test: string; error: string }[] = [];
    for (const test of module.children.allTests()) {
      const outcome = test.result();
      if (outcome.state === "passed") result.passed++;
      else if (outcome.state === "failed") {
        result.failed++;
        const [first] = outcome.errors ?? [];
        const error = first ? `${first.message ?? ""}\n${first.stack ?? ""}` : "";
        failures.push({ test: test.fullName, error: error.slice(0, ERROR_CHARS) });
      } else result.skipped++;
    }
    // Errors of the file itself (a hook, an import), which fail it without failing a test.
    for (const e of module.errors())
      failures.push({ test: "(the file itself)", error: `${e.message ?? ""}\n${e.stack ?? ""}`.slice(0, ERROR_CHARS) });
    if (failures.length) result.failures = failures;
    result.fileFailed = module.state() === "failed" && result.failed === 0;
    result.durationMs = Math.round(module.diagnostic().duration);
    appendFileSync(this.#path, `${JSON.stringify(result)}\n`);
  }
}
