// Prints the plain closing line of a test run ("N passed, N failed, N skipped") from
// vitest's JSON report, and keeps vitest's exit status.
import { readFileSync } from "node:fs";

const [reportPath, status] = process.argv.slice(2);
try {
  const report = JSON.parse(readFileSync(reportPath!, "utf8")) as {
    numPassedTests: number;
    numFailedTests: number;
    numPendingTests: number;
    numTodoTests: number;
  };
  console.log(
    `\n${report.numPassedTests} passed, ${report.numFailedTests} failed, ` +
      `${report.numPendingTests + report.numTodoTests} skipped`,
  );
} catch {
  console.log("\nNo test report was written: the run did not complete.");
}
process.exit(Number(status ?? 1));
