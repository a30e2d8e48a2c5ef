// The one table of a run, and its goals, judged from the run's own figures.
import type { Figure } from "./load.ts";

export interface Verdict {
  pass: boolean;
  /** What was measured against what was asked, in a few words. */
  detail: string;
}

export const verdict = (pass: boolean, detail: string): Verdict => ({ pass, detail });

/** 1000 → "1k", 500 → "500". */
export const size = (n: number) => (n >= 1000 && n % 1000 === 0 ? `${n / 1000}k` : String(n));

export interface Row extends Figure {
  /** Ratio columns: throughput against the bare route, the row's floor, and a reference row. */
  bare?: Figure;
  floor?: Figure;
  ref?: Figure;
  goal?: Verdict;
  /** A list row judged by CPU ms per row skipped or counted rather than by throughput. */
  perRow?: boolean;
}

export interface Goal {
  title: string;
  verdicts: Verdict[];
}

const ratio = (a: Figure, b?: Figure) => (b && b.rps > 0 ? (a.rps / b.rps).toFixed(2) : "");
const ms = (v: number) => (Number.isFinite(v) ? v.toFixed(1) : v === Number.POSITIVE_INFINITY ? "lost" : "-");

export function printTable(rows: Row[]) {
  const width = Math.max(40, ...rows.map((r) => r.name.length));
  const head = [
    "name".padEnd(width),
    "req/s".padStart(8),
    "p50 ms".padStart(8),
    "p99 ms".padStart(9),
    "cpu ms".padStart(7),
    "wkd ms".padStart(7),
    "×bare".padStart(6),
    "×floor".padStart(7),
    "×ref".padStart(6),
    "non-2xx".padStart(8),
    " goal",
  ].join(" ");
  console.log(head);
  console.log("─".repeat(head.length + 24));
  for (const r of rows) {
    console.log(
      [
        r.name.padEnd(width),
        r.rps.toFixed(0).padStart(8),
        ms(r.p50).padStart(8),
        ms(r.p99).padStart(9),
        (r.cpuMs === undefined ? "" : r.cpuMs.toFixed(2)).padStart(7),
        (r.workerdMs === undefined ? "" : r.workerdMs.toFixed(2)).padStart(7),
        ratio(r, r.bare).padStart(6),
        ratio(r, r.floor).padStart(7),
        ratio(r, r.ref).padStart(6),
        String(r.unexpected).padStart(8),
        r.goal ? ` ${r.goal.pass ? "PASS" : "MISS"} ${r.goal.detail}` : "",
      ].join(" "),
    );
  }
}

export function printGoals(goals: Goal[]) {
  console.log("\nGoals (judged from this run's figures):");
  let met = 0;
  for (const g of goals) {
    const measured = g.verdicts.length > 0;
    const pass = measured && g.verdicts.every((v) => v.pass);
    if (pass) met++;
    const passed = g.verdicts.filter((v) => v.pass).length;
    const summary = !measured
      ? "not measured"
      : g.verdicts.length === 1
        ? g.verdicts[0]!.detail
        : `${passed} of ${g.verdicts.length} rows pass`;
    console.log(`  ${measured ? (pass ? "PASS" : "MISS") : "----"}  ${g.title}: ${summary}`);
  }
  console.log(`  ${met} of ${goals.length} goals met.`);
}
