import { existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { availableParallelism } from "node:os";
import { dirname, resolve } from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import type { Plugin } from "vite";
import { defineConfig } from "vitest/config";

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

/**
 * Test files that touch only the data they mint and leave nothing running that a later file could
 * meet: no media destination or calendar, no sweep, Cron run, master-key rotation or count over
 * every agency, no webhook delivery they wait for in the background (what they leave pending is
 * ended after each file, see test/support/shared-runtime.ts). They run one after another in one
 * runtime, which saves starting a runtime per file. Every other file gets a runtime, and storage,
 * of its own.
 */
const SHARED_RUNTIME = [
  "test/client/client.test.ts",
  "test/client/webhooks.test.ts",
  "test/contract/conditional.test.ts",
  "test/contract/conformance.test.ts",
  "test/contract/docs.test.ts",
  "test/contract/errors-catalog.test.ts",
  "test/contract/limits-route.test.ts",
  "test/contract/model-a.test.ts",
  "test/contract/model-b.test.ts",
  "test/contract/openapi-client.test.ts",
  "test/contract/validation.test.ts",
  "test/contract/wire.test.ts",
  "test/keys-and-auth/auth.test.ts",
  "test/keys-and-auth/confirmed-reads.test.ts",
  "test/keys-and-auth/crypto.test.ts",
  "test/keys-and-auth/idempotency-claim.test.ts",
  "test/keys-and-auth/idempotency-complete.test.ts",
  "test/keys-and-auth/idempotency-ledger.test.ts",
  "test/keys-and-auth/idempotency.test.ts",
  "test/keys-and-auth/rate-limit-window.test.ts",
  "test/keys-and-auth/rate-limit.test.ts",
  "test/listings/list-growth.test.ts",
  "test/listings/listing-races.test.ts",
  "test/listings/listings.test.ts",
  "test/listings/tours.test.ts",
  "test/listings/version-guard.test.ts",
  "test/media/multipart-r2.test.ts",
  "test/operations/outbound-policy.test.ts",
  "test/operations/sessions.test.ts",
  "test/sandbox/test-helpers-live.test.ts",
  "test/scheduling/ics-feeds.test.ts",
  "test/scheduling/ics-recurrence.test.ts",
  "test/scheduling/ics-zones.test.ts",
  "test/scheduling/scheduling.test.ts",
  "test/scheduling/slots.test.ts",
  "test/tenancy/quotas.test.ts",
  "test/tenancy/tenant.test.ts",
  "test/tenancy/users.test.ts",
  "test/webhooks/event-scopes.test.ts",
  "test/webhooks/events.test.ts",
  "test/webhooks/ssrf.test.ts",
  "test/webhooks/stripe.test.ts",
  "test/webhooks/webhook-endpoint-limit.test.ts",
  "test/webhooks/webhooks.test.ts",
];

/** A project of tests in the Workers runtime; `isolate` gives each file a runtime of its own. */
async function workersProject(name: string, files: { include?: string[]; exclude?: string[]; isolate: boolean }) {
  return {
    plugins: [
      withoutDanglingSourceMaps(),
      cloudflareTest({
        wrangler: { configPath: "./wrangler.jsonc" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: await readD1Migrations("./migrations"),
            ...TEST_SECRETS,
            // A moved agency's old shard refuses its writes this long after the switch (10 s deployed).
            MOVE_DWELL_MS: "300",
            // New agencies stay on the first shard here; a test puts one on the second itself (makeTenant).
            OPEN_SHARDS: "shard-1",
            // `npm run fuzz` hands its seed and request count to the fuzz files.
            FUZZ_SEED: process.env.FUZZ_SEED ?? "",
            FUZZ_RUNS: process.env.FUZZ_RUNS ?? "",
          },
        },
      }),
    ],
    test: {
      name,
      include: files.include ?? ["test/**/*.test.ts"],
      exclude: ["test/node/**", "test/browser/**", "test/cli/**", ...(files.exclude ?? [])],
      isolate: files.isolate,
      // The shared files run in one runtime, in a group of their own after the others. With two at
      // once, the pool sometimes never learned that one had ended its run (7 of 34 runs of the
      // shared project alone) until tests stopped awaiting promises and writing console lines
      // for other requests' contexts (0 of 12 since). One runtime is handed every file in one
      // run, so should that run's end still be lost, every result is already in and
      // scripts/test-run.ts ends the run after its linger.
      ...(files.isolate ? {} : { maxWorkers: 1, sequence: { groupOrder: 1 } }),
      setupFiles: [
        "./test/support/info-lines.ts",
        "./test/support/apply-migrations.ts",
        ...(files.isolate ? [] : ["./test/support/shared-runtime.ts"]),
      ],
      testTimeout: 20_000,
    },
  };
}

export default defineConfig(async () => ({
  test: {
    // vitest's default (one fewer than the cores) is one worker on a 2-core machine, where the
    // runtimes' start-up and the Node side of the run leave a second core half idle.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // Every request and run of the Worker writes an info line (its wide event); tests that need
    // them read them from a spy on console.log. Warnings and errors are printed as ever.
    onConsoleLog: (line: string, type: "stdout" | "stderr") =>
      type === "stdout" && line.startsWith('{"level":"info"') ? false : undefined,
    projects: [
      // Integration tests inside the Workers runtime, against real D1, Durable Objects, Queues and R2.
      await workersProject("workers", { exclude: SHARED_RUNTIME, isolate: true }),
      await workersProject("workers-shared", { include: SHARED_RUNTIME, isolate: false }),
      {
        // Checks that need Node: the OpenAPI 3.1 schema validator reads its schemas from
        // disk and compiles them with code generation, which workerd does not allow.
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
