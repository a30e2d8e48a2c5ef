// Schema fuzzing with a random seed and a large request count:
//   npm run fuzz [-- --seed=<n>] [-- --runs=<n>]
// Prints the seed first; a failure prints fast-check's seed, path and shrunk counterexample.
import { spawnSync } from "node:child_process";

const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
const seed = Number(arg("seed") ?? Math.floor(Math.random() * 2 ** 31));
const runs = Number(arg("runs") ?? 20_000);
console.log(`fuzz seed ${seed} (public file ${seed}, internal file ${seed + 1}), ${runs} requests`);

const result = spawnSync(
  "vitest",
  ["run", "test/contract/fuzz-public.test.ts", "test/contract/fuzz-internal.test.ts"],
  {
    stdio: "inherit",
    env: { ...process.env, FUZZ_SEED: String(seed), FUZZ_RUNS: String(runs) },
  },
);
console.log(
  `fuzz seed ${seed}: ${result.status === 0 ? "passed" : "FAILED"}; rerun with npm run fuzz -- --seed=${seed}`,
);
process.exit(result.status ?? 1);
