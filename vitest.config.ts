import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";
import { textModules } from "./scripts/text-modules.ts";

/** Test-only secrets, handed to the Worker as bindings. */
const TEST_SECRETS = {
  SECRET_KEY: "test-secret-key-0123456789abcdef0123456789abcdef",
  OPERATOR_TOKEN: "test-operator-token",
  STRIPE_WEBHOOK_SECRET: "whsec_stripe_test_secret",
};
// Wrangler checks the required secrets against the environment before the bindings
// below override them; a clean clone has no .dev.vars, so it would warn on every file.
process.env.SECRET_KEY ??= TEST_SECRETS.SECRET_KEY;

/**
 * Some packages (stripe, standardwebhooks) publish source maps that point to sources they do not
 * publish; Vite reads each map and warns that its sources are missing. Such a file is loaded without
 * its map, which has nothing to map to; a map whose sources exist is read as usual.
 */
function withoutDanglingSourceMaps(): Plugin {
  return {
    name: "without-dangling-source-maps",
    enforce: "pre",
    async load(id) {
      const file = id.split("?")[0]!;
      if (!file.includes("/node_modules/") || !/\.[cm]?js$/.test(file)) return null;
      const code = await readFile(file, "utf8").catch(() => null);
      const comment = code === null ? null : /\n\/\/# sourceMappingURL=(?!data:)(\S+)\s*$/.exec(code);
      if (!code || !comment) return null;
      const mapPath = resolve(dirname(file), comment[1]!);
      const map = JSON.parse(await readFile(mapPath, "utf8").catch(() => "{}")) as {
        sourceRoot?: string;
        sources?: string[];
        sourcesContent?: (string | null)[];
      };
      const root = resolve(dirname(mapPath), map.sourceRoot ?? "");
      const dangling = (map.sources ?? []).some(
        (source, i) => map.sourcesContent?.[i] == null && !existsSync(resolve(root, source)),
      );
      return dangling ? code.slice(0, comment.index) : null;
    },
  };
}

export default defineConfig(async () => ({
  test: {
    // Every request and run of the Worker writes an info line (its wide event); tests that need
    // them read them from a spy on console.log. Warnings and errors are printed as ever.
    onConsoleLog: (line: string, type: "stdout" | "stderr") =>
      type === "stdout" && line.startsWith('{"level":"info"') ? false : undefined,
    projects: [
      {
        // Integration tests inside the Workers runtime, against real D1, Durable Objects, Queues and R2.
        resolve: textModules,
        plugins: [
          withoutDanglingSourceMaps(),
          cloudflareTest({
            wrangler: { configPath: "./wrangler.jsonc" },
            miniflare: {
              bindings: {
                TEST_MIGRATIONS: await readD1Migrations("./migrations"),
                ...TEST_SECRETS,
                // `npm run fuzz` hands its seed and request count to the fuzz files.
                FUZZ_SEED: process.env.FUZZ_SEED ?? "",
                FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
              },
            },
          }),
        ],
        test: {
          name: "workers",
          include: ["test/**/*.test.ts"],
          exclude: ["test/node/**", "test/browser/**", "test/cli/**"],
          setupFiles: ["./test/support/apply-migrations.ts"],
          testTimeout: 20_000,
        },
      },
      {
        // Checks that need Node: the OpenAPI 3.1 schema validator reads its schemas from
        // disk and compiles them with code generation, which workerd does not allow.
        resolve: textModules,
        test: { name: "node", environment: "node", include: ["test/node/*.test.ts"], testTimeout: 30_000 },
      },
      {
        // The API reference page in headless Chromium against `wrangler dev`, offline.
        test: {
          name: "browser",
          environment: "node",
          include: ["test/browser/*.test.ts"],
          testTimeout: 300_000,
          hookTimeout: 60_000,
        },
      },
      {
        // The operator CLI against a real `npm run dev` (wrangler dev on a free port, with its own state).
        test: { name: "cli", environment: "node", include: ["test/cli/*.test.ts"], testTimeout: 240_000 },
      },
    ],
  },
}));
