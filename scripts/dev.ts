// Local development in one command: secrets, migrations, the Worker, a seeded demo
// sandbox (only when empty; existing data is kept) and a working sandbox key.
//
//   npm run dev                       # http://127.0.0.1:8787
//   npm run dev -- --port 8790        # or PORT=8790 npm run dev
//   npm run dev -- --test-scheduled   (other arguments go to wrangler dev)
import { spawn, spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { type Api, seedDemo } from "./seed.ts";

/** The port (`--port N`, `--port=N` or PORT), and the arguments left for wrangler dev. */
function portAndArgs(argv: string[]): { port: number; rest: string[] } {
  let port = Number(process.env.PORT ?? 8787);
  const rest: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === "--port" && argv[i + 1] !== undefined) port = Number(argv[++i]);
    else if (arg.startsWith("--port=")) port = Number(arg.slice("--port=".length));
    else rest.push(arg);
  }
  if (!Number.isInteger(port) || port < 1 || port > 65535) throw new Error(`Not a port: ${port}.`);
  return { port, rest };
}

const { port, rest: wranglerArgs } = portAndArgs(process.argv.slice(2));
const origin = `http://127.0.0.1:${port}`;
const childEnv = { ...process.env, WRANGLER_SEND_METRICS: "false" };

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

function applyMigrations() {
  const r = spawnSync("wrangler", ["d1", "migrations", "apply", "DB", "--local"], {
    stdio: ["ignore", "pipe", "inherit"],
    env: childEnv,
    encoding: "utf8",
  });
  if (r.status !== 0) {
    console.error(r.stdout);
    throw new Error("Applying the local D1 migrations failed.");
  }
  console.log(
    /No migrations to apply/.test(r.stdout) ? "Local database is up to date." : "Applied local D1 migrations.",
  );
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
  applyMigrations();
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
    ...wranglerArgs,
  ];
  const wrangler = spawn("wrangler", args, { stdio: "inherit", env: childEnv });
  const stop = () => wrangler.kill("SIGINT");
  process.on("SIGINT", stop);
  process.on("SIGTERM", stop);
  wrangler.on("exit", (code) => process.exit(code ?? 0));

  await waitUntilReady();
  const { key, agencyName, seeded } = await seedDemo(internalApi(token), origin);
  console.log(`
────────────────────────────────────────────────────────────────────────
 Agency Listing and Media Service: local sandbox on ${origin}
 ${seeded ? "Seeded the demo sandbox." : "Kept the existing local data."}
 Sandbox key for "${agencyName}" (shown once; a fresh one each start):

   ${key}

 Try it:
   curl -s ${origin}/api/v1/users -H 'X-API-Key: ${key}'

 API reference:  ${origin}/api/v1/docs
 Operator CLI:   npm run ops -- --help
────────────────────────────────────────────────────────────────────────
`);
}

main().catch((err: Error) => {
  console.error(err.message);
  process.exit(1);
});
