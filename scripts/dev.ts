// Local development in one command: secrets, migrations, the Worker, a seeded demo
// sandbox (only when empty; existing data is kept) and a working sandbox key.
//
//   npm run dev                       # http://127.0.0.1:8787
//   npm run dev -- --port 8790        # or PORT=8790 npm run dev
//   npm run dev -- --new-key          # revoke the development key and print a new one
//   (other arguments go to wrangler dev)
//
// The Cron triggers of wrangler.jsonc run on their schedules while it runs (scripts/local-cron.ts).
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { configuredCrons, runLocalCron } from "./local-cron.ts";
import { applyLocalMigrations } from "./local-migrations.ts";
import { type Api, seedDemo } from "./seed.ts";

/**
 * The port (`--port N`, `--port=N` or PORT), whether a new key was asked for, where the local
 * state lives (wrangler's own `--persist-to`, else its default), and the arguments left for
 * wrangler dev.
 */
function parseArgs(argv: string[]): { port: number; newKey: boolean; state: string; rest: string[] } {
  let port = Number(process.env.PORT ?? 8787);
  let newKey = false;
  let state = join(".wrangler", "state");
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--port" && argv[i + 1] !== undefined) port = Number(argv[++i]);
    else if (arg.startsWith("--port=")) port = Number(arg.slice("--port=".length));
    else if (arg === "--new-key") newKey = true;
    else {
      if (arg === "--persist-to" && argv[i + 1] !== undefined) state = argv[i + 1]!;
      else if (arg.startsWith("--persist-to=")) state = arg.slice("--persist-to=".length);
      rest.push(arg);
    }
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`Not a port: ${port}.`);
  return { port, newKey, state, rest };
}

const { port, newKey, state, rest: wranglerArgs } = parseArgs(process.argv.slice(2));
const origin = `http://127.0.0.1:${port}`;
// Miniflare otherwise fetches a sample `Request.cf` from workers.cloudflare.com at each start,
// and prints a stack trace when offline; the Worker reads nothing of `request.cf`.
const childEnv = {
  CLOUDFLARE_CF_FETCH_ENABLED: "false",
  ...process.env,
  WRANGLER_SEND_METRICS: "false",
};

/**
 * The development key's secret, kept beside the local state it belongs to (a secret cannot be
 * read back from its stored hash), so a restart prints the same key; deleting the state drops it.
 */
/**
 * How long a minute of the local Cron schedule lasts: 60 s, as deployed, unless
 * LOCAL_CRON_MINUTE_MS says otherwise (the tests run the schedule on a faster clock).
 */
function localMinuteMs(): number {
  const ms = Number(process.env.LOCAL_CRON_MINUTE_MS ?? 60_000);
  if (!Number.isInteger(ms) || ms < 100 || ms > 60_000)
    throw new Error(`LOCAL_CRON_MINUTE_MS must be a whole number of milliseconds from 100 to 60000, not ${ms}.`);
  return ms;
}

const keyFile = join(state, "dev-key");

function keptKey(): string | undefined {
  if (newKey || !existsSync(keyFile)) return undefined;
  return readFileSync(keyFile, "utf8").trim() || undefined;
}

function keepKey(key: string) {
  mkdirSync(state, { recursive: true });
  writeFileSync(keyFile, `${key}\n`, { mode: 0o600 });
}

function ensureDevVars(): string {
  const file = ".dev.vars";
  let text = existsSync(file) ? readFileSync(file, "utf8") : "";
  const get = (name: string) => new RegExp(`^${name}=(.*)$`, "m").exec(text)?.[1]?.replace(/^"|"$/g, "");
  const additions: string[] = [];
  if (!get("SECRET_KEY")) additions.push(`SECRET_KEY=${randomBytes(32).toString("base64url")}`);
  if (!get("OPERATOR_TOKEN")) additions.push(`OPERATOR_TOKEN=${randomBytes(24).toString("base64url")}`);
  if (additions.length) {
    text = `${text}${text && !text.endsWith("\n") ? "\n" : ""}${additions.join("\n")}\n`;
    writeFileSync(file, text, { mode: 0o600 });
    console.log(
      `Wrote ${additions.map((a) => a.split("=")[0]).join(" and ")} to .dev.vars (local secrets, not committed).`,
    );
  }
  return get("OPERATOR_TOKEN")!;
}

/** Applies what is pending to every local shard (each carries the full schema), saying what it did. */
async function applyMigrations() {
  for (const { binding, applied } of await applyLocalMigrations(state))
    console.log(applied ? `Applied local D1 migrations to ${binding}.` : `Local database ${binding} is up to date.`);
}

async function waitUntilReady(timeoutMs = 90_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    try {
      const res = await fetch(`${origin}/api/v1/openapi.json`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 300));
  }
  throw new Error(`The Worker did not answer on ${origin} within ${timeoutMs / 1000} s.`);
}

function internalApi(token: string): Api {
  return async (method, path, body) => {
    const res = await fetch(`${origin}${path}`, {
      method,
      headers: {
        Authorization: `Bearer ${token}`,
        ...(body !== undefined ? { "Content-Type": "application/json" } : {}),
      },
      body: body !== undefined ? JSON.stringify(body) : undefined,
    });
    const json = (await res.json()) as Record<string, any>;
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${JSON.stringify(json)}`);
    return json;
  };
}

async function main() {
  const token = ensureDevVars();
  await applyMigrations();
  // The operator token is optional in deployed environments, so it is not a declared
  // secret; locally it is handed to the Worker as a variable.
  const args = [
    "dev",
    "--ip",
    "127.0.0.1",
    "--port",
    String(port),
    "--var",
    `OPERATOR_TOKEN:${token}`,
    // Public URLs (a listing's public_url) name the port this sandbox answers on, unless a --var says otherwise.
    ...(wranglerArgs.some((arg) => arg.startsWith("SITE_URL:")) ? [] : ["--var", `SITE_URL:http://localhost:${port}`]),
    "--test-scheduled",
    ...wranglerArgs,
  ];
  const wrangler = spawn("wrangler", args, { stdio: "inherit", env: childEnv });
  let stopCron = () => {};
  const stop = () => {
    stopCron();
    wrangler.kill("SIGINT");
  };
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  wrangler.on("exit", (code) => process.exit(code ?? 0));

  await waitUntilReady();
  const crons = configuredCrons();
  stopCron = runLocalCron(origin, crons, (line) => console.log(line), localMinuteMs());
  const { key, agencyName, seeded, reused } = await seedDemo(internalApi(token), origin, keptKey());
  if (!reused) keepKey(key);
  console.log(`
────────────────────────────────────────────────────────────────────────
 Agency Listing and Media Service: local sandbox on ${origin}
 ${seeded ? "Seeded the demo sandbox." : "Kept the existing local data."}
 Sandbox key for "${agencyName}" (${reused ? "the same as last start" : "new"}; kept across restarts,
 \`npm run dev -- --new-key\` revokes it and prints another):

   ${key}

 Try it:
   curl -s ${origin}/api/v1/users -H 'X-API-Key: ${key}'

 Cron triggers:  ${crons.join(", ")}, run on their schedules (UTC) as deployed
 API reference:  ${origin}/api/v1/docs
 Operator CLI:   ALMS_URL=${origin} npm run ops -- --help
────────────────────────────────────────────────────────────────────────
`);
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
