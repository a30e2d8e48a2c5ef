import { execFileSync } from "node:child_process";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { afterAll, describe, expect, it } from "vitest";

const root = join(__dirname, "..", "..");
const wrangler = join(root, "node_modules", ".bin", "wrangler");
const scratch = mkdtempSync(join(tmpdir(), "deploy-"));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

/** Workers' limit on a paid plan's Worker after compression; the free plan allows 3 MiB. */
const COMPRESSED_LIMIT = 10 * 1024 * 1024;
/** The bench's bundle goal (2 MB): a bundle holding the reference page's script is twice that. */
const ASSET_FREE_LIMIT = 2_000_000;

/**
 * Builds the Worker as `wrangler deploy` would for an environment, without uploading it:
 * the configuration of that environment must be valid and the bundle must build and fit.
 */
function dryRun(environment: "sandbox" | "live") {
  const outdir = join(scratch, environment);
  const metafile = join(scratch, `${environment}-meta.json`);
  const args = ["deploy", "--dry-run", "--env", environment, "--outdir", outdir, "--metafile", metafile];
  const report = execFileSync(wrangler, args, {
    cwd: root,
    encoding: "utf8",
    stdio: "pipe",
    env: { ...process.env, WRANGLER_SEND_METRICS: "false", CI: "true" },
  });
  const files = readdirSync(outdir).filter((f) => f.endsWith(".js"));
  const contents = files.map((f) => readFileSync(join(outdir, f)));
  const code = contents.map((c) => c.toString("utf8")).join("\n");
  const bytes = contents.reduce((n, c) => n + c.length, 0);
  const compressed = contents.reduce((n, c) => n + gzipSync(c).length, 0);
  const meta = JSON.parse(readFileSync(metafile, "utf8")) as {
    inputs: Record<string, { imports: { path: string; original?: string }[] }>;
  };
  return { report, files, code, bytes, compressed, meta };
}

describe("the deployed environments build", () => {
  for (const environment of ["sandbox", "live"] as const)
    it(`wrangler deploy --dry-run --env ${environment} builds a Worker within the size limit`, () => {
      const built = dryRun(environment);
      expect(built.report).toContain("--dry-run: exiting now.");
      expect(built.report).toContain(`alms-${environment}`);
      expect(built.files).toContain("index.js");
      expect(built.compressed).toBeLessThan(COMPRESSED_LIMIT);
      // The reference page's script goes up beside the Worker as a static asset, read through
      // ASSETS, never inside the bundle (the script alone is over 4 MB).
      expect(built.report).toMatch(/Read \d+ files? from the assets directory .*[\\/]assets\b/);
      expect(built.report).toMatch(/env\.ASSETS\s+Assets/);
      expect(built.bytes).toBeLessThan(ASSET_FREE_LIMIT);
      // zod's messages in English only: the alias in wrangler.jsonc leaves its other locales out.
      expect(built.code).toContain("Invalid input: expected");
      // (Messages in plain ASCII: the minified bundle escapes other characters.)
      expect(built.code).not.toContain("Ongeldige invoer");
      expect(built.code).not.toContain("Eingabe");
      // The alias matches an import's exact text, so it must reach zod's two imports of its
      // locale index and nothing else: another package importing "../locales/index.js"
      // would otherwise be handed zod's English without a word.
      const aliased = Object.entries(built.meta.inputs).flatMap(([file, input]) =>
        input.imports.filter((i) => i.original === "../locales/index.js").map((i) => `${file} -> ${i.path}`),
      );
      expect(aliased.sort()).toEqual([
        "node_modules/zod/v4/classic/external.js -> src/http/openapi/zod-locales.ts",
        "node_modules/zod/v4/core/index.js -> src/http/openapi/zod-locales.ts",
      ]);
      console.log(
        `${environment}: ${(built.bytes / 1024 / 1024).toFixed(2)} MiB, ` +
          `${(built.compressed / 1024 / 1024).toFixed(2)} MiB gzipped`,
      );
    }, 120_000);
});
