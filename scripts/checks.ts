// Runs the lint and the type checks of `npm test` side by side, each one's output held and
// printed whole, in order, once both have ended: a 2-core machine runs them in the time of
// the longer. Fails when either fails.
//
//   node scripts/checks.ts            (npm test runs it before the tests)
import { spawn } from "node:child_process";

const CHECKS = ["lint", "typecheck"];

function run(script: string): Promise<{ script: string; status: number; output: string }> {
  return new Promise((resolve) => {
    const child = spawn("npm", ["run", script], { stdio: ["ignore", "pipe", "pipe"] });
    let output = "";
    child.stdout.on("data", (chunk) => {
      output += chunk;
    });
    child.stderr.on("data", (chunk) => {
      output += chunk;
    });
    child.once("close", (code, signal) => resolve({ script, status: code ?? (signal ? 1 : 0), output }));
  });
}

const results = await Promise.all(CHECKS.map(run));
for (const { output } of results) process.stdout.write(output);
const failed = results.filter((r) => r.status !== 0).map((r) => r.script);
if (failed.length) console.error(`\nnpm run ${failed.join(" and ")} failed.`);
process.exit(failed.length ? 1 : 0);
