// Prints the plain closing line of a test run ("N passed, N failed, N skipped") from the
// per-file results `scripts/test-results-reporter.ts` wrote, and keeps the run's exit status.
// Given the run's printed output too, it holds the run to being quiet: a line that shows an
// uncaught error, a runtime exception or warning, an error or warning log no test captured,
// or a toolchain warning fails the run (exit 1) and is listed, even when every test passed.
//
//   node scripts/test-summary.ts .vitest/results.jsonl <exit status> [.vitest/output.log]
import { readFileSync } from "node:fs";
import type { FileResult } from "./test-results-reporter.ts";

/** What a quiet run never prints; each names the kind of noise it catches. */
export const NOISE: [kind: string, pattern: RegExp][] = [
  ["uncaught error", /\buncaught\b|\bunhandled (error|rejection)/i],
  // workerd's own exceptions ("exception = kj/…", "e = rust/…") and console warnings.
  ["runtime exception", /^\s*(exception|e) = \S+:\d+: /],
  ["runtime warning", /^console warning;/],
  ["uncaptured log", /"level":\s*"(error|warn)"/],
  // vitest's heading over console.error/console.warn output of a test.
  ["uncaptured log", /^stderr \| /],
  ["toolchain warning", /\bsourcemap\b.*\b(missing|outside)\b|\bdeprecat|^\s*(\[\w+\]\s*)?warn(ing)?\b[:!]?/i],
];

/** The noise lines of a run's output, with their kind; ANSI colours are ignored. */
export function noise(output: string): { kind: string; line: string }[] {
  const found: { kind: string; line: string }[] = [];
  // Lines that name a test ("✓ …", "× …") are the reporter's own.
  for (const raw of output.split("\n")) {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: ANSI escape sequences
    const line = raw.replace(/\u001b\[[0-9;]*m/g, "").trimEnd();
    if (/^\s*[✓×↓]\s/.test(line)) continue;
    const hit = NOISE.find(([, pattern]) => pattern.test(line));
    if (hit) found.push({ kind: hit[0], line });
  }
  return found;
}

/** The results of every file, the last line of a file winning; none when nothing was written. */
export function readResults(path: string): FileResult[] {
  let text: string;
  try {
    text = readFileSync(path, "utf8");
  } catch {
    return [];
  }
  const byFile = new Map<string, FileResult>();
  for (const line of text.split("\n")) {
    if (!line.trim()) continue;
    const result = JSON.parse(line) as FileResult;
    byFile.set(`${result.project}\u0000${result.file}`, result);
  }
  return [...byFile.values()];
}

/** The run's totals: a file that failed without a failing test counts as one failure. */
export function totals(results: FileResult[]): { passed: number; failed: number; skipped: number } {
  const sum = { passed: 0, failed: 0, skipped: 0 };
  for (const r of results) {
    sum.passed += r.passed;
    sum.failed += r.failed + (r.fileFailed ? 1 : 0);
    sum.skipped += r.skipped;
  }
  return sum;
}

/** A file's group: its project, and for the Workers projects the area folder under test/. */
const groupOf = (r: FileResult) =>
  r.project.startsWith("workers") ? `${r.project} ${r.file.split("/").slice(0, 2).join("/")}` : r.project;

/**
 * The time each group of files took, slowest first, with its file count and slowest file.
 * Files run two or more at a time, so the times add up to more than the run's own.
 */
export function groupTimes(results: FileResult[]): string[] {
  const groups = new Map<string, { ms: number; files: number; slowest: FileResult }>();
  for (const r of results) {
    const name = groupOf(r);
    const g = groups.get(name) ?? { ms: 0, files: 0, slowest: r };
    g.ms += r.durationMs ?? 0;
    g.files++;
    if ((r.durationMs ?? 0) > (g.slowest.durationMs ?? 0)) g.slowest = r;
    groups.set(name, g);
  }
  const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
  return [...groups.entries()]
    .sort(([, a], [, b]) => b.ms - a.ms)
    .map(
      ([name, g]) =>
        `${seconds(g.ms).padStart(8)}  ${name} (${g.files} file${g.files === 1 ? "" : "s"}; ` +
        `slowest ${g.slowest.file.split("/").pop()}, ${seconds(g.slowest.durationMs ?? 0)})`,
    );
}

/** Prints the time per group, the closing line and the noise found; answers the run's exit code. */
export function summarize(resultsPath: string, status: number, outputPath?: string): number {
  let exitCode = status;
  const results = readResults(resultsPath);
  if (results.length) {
    console.log("\nTime per group of test files:");
    for (const line of groupTimes(results)) console.log(line);
    const t = totals(results);
    for (const r of results)
      for (const f of r.failures ?? []) console.log(`\nFAILED ${r.file} > ${f.test}\n${f.error}`);
    console.log(`\n${t.passed} passed, ${t.failed} failed, ${t.skipped} skipped`);
    if (t.failed && !exitCode) exitCode = 1;
  } else {
    console.log("\nNo test results were written: the run did not complete.");
    if (!exitCode) exitCode = 1;
  }
  if (outputPath) {
    let output = "";
    try {
      output = readFileSync(outputPath, "utf8");
    } catch {
      console.log(`No output was recorded at ${outputPath}.`);
      if (!exitCode) exitCode = 1;
    }
    const found = noise(output);
    if (found.length) {
      console.log(`The run was not quiet: ${found.length} line(s) of noise.`);
      for (const { kind, line } of found.slice(0, 50)) console.log(`  ${kind}: ${line.slice(0, 300)}`);
      if (found.length > 50) console.log(`  … and ${found.length - 50} more (see ${outputPath}).`);
      if (!exitCode) exitCode = 1;
    }
  }
  return exitCode;
}

if (import.meta.main) {
  const [resultsPath, status, outputPath] = process.argv.slice(2);
  process.exit(summarize(resultsPath!, Number(status ?? 1), outputPath));
}
