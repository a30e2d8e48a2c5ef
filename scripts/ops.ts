// Operator CLI for the internal (dashboard) API. Every operation of the internal
// OpenAPI document is a command, named by its operationId, so the CLI never lags the API.
// Two more commands work with a sandbox key instead: `listen` forwards the agency's events
// to a local receiver, `trigger` fires one event through the sandbox's test helpers.
//
//   npm run ops -- --help
//   npm run ops -- <operation> --help
//   npm run ops -- <operation> --name value [--json '{"raw": "body"}']
//   npm run ops -- listen --forward-to http://localhost:4242/webhooks [--key sk_test_…]
//   npm run ops -- trigger listing.created [--key sk_test_…]
import { readFileSync } from "node:fs";
import { describeAnswer, keyFrom, publicApi } from "./ops-api.ts";
import { LISTEN_USAGE, listen, newSecret, parseFilters } from "./ops-listen.ts";
import { TRIGGER_USAGE, trigger } from "./ops-trigger.ts";

interface Parameter {
  name: string;
  in: "path" | "query" | "header" | "cookie";
  required?: boolean;
  schema?: { type?: string; enum?: unknown[] };
  description?: string;
}
interface Operation {
  operationId: string;
  summary?: string;
  description?: string;
  parameters?: Parameter[];
  requestBody?: { content?: { "application/json"?: { schema?: JsonSchema } } };
}
interface JsonSchema {
  type?: string | string[];
  properties?: Record<string, JsonSchema>;
  required?: string[];
  enum?: unknown[];
  description?: string;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
  $ref?: string;
}
interface Command {
  method: string;
  path: string;
  op: Operation;
}

function devVar(name: string): string | undefined {
  try {
    const line = readFileSync(".dev.vars", "utf8")
      .split("\n")
      .find((l) => l.startsWith(`${name}=`));
    return line?.slice(name.length + 1).replace(/^"|"$/g, "");
  } catch {
    return undefined;
  }
}

const baseUrl = (process.env.ALMS_URL ?? "http://127.0.0.1:8787").replace(/\/$/, "");
const token = process.env.ALMS_OPERATOR_TOKEN ?? devVar("OPERATOR_TOKEN");

const USAGE = `Usage: npm run ops -- <operation> [--field value ...] [--json '<body>']
       npm run ops -- listen --forward-to <url> [--key sk_test_…]   (see listen --help)
       npm run ops -- trigger <event_type> [--key sk_test_…]        (see trigger --help)

Drives the internal (dashboard) API of the Agency Listing and Media Service.
Each operation of ${baseUrl}/internal/v1/openapi.json is a command.
listen and trigger use the public API with a sandbox key instead of the operator token.

Options:
  --help               this text, with the list of operations (needs the service)
  <operation> --help   the operation's path, query and body fields
  --json '<object>'    the whole request body as JSON (merged under --field values)
  --field value        a path, query or body field; values that parse as JSON
                       (numbers, true/false, null, arrays, objects) are sent as such

Environment:
  ALMS_URL             service origin (default http://127.0.0.1:8787)
  ALMS_OPERATOR_TOKEN  operator token (default: OPERATOR_TOKEN from .dev.vars)
  ALMS_API_KEY         sandbox key of listen and trigger (npm run dev prints one)
  ALMS_WEBHOOK_SECRET  signing secret listen signs with (default: a new one, printed)

Examples:
  npm run ops -- listAgencies
  npm run ops -- createAgency --name "Harbour Media" --kind media_agency
  npm run ops -- mintApiKey --agency_id agy_… --minted_by_user_id usr_…
  npm run ops -- revokeApiKey --key_id key_…
  npm run ops -- request req_…`;

async function loadCommands(): Promise<Map<string, Command>> {
  if (!token)
    throw new Error("No operator token: set ALMS_OPERATOR_TOKEN or create .dev.vars (npm run dev writes one).");
  let res: Response;
  try {
    res = await fetch(`${baseUrl}/internal/v1/openapi.json`, { headers: { Authorization: `Bearer ${token}` } });
  } catch {
    throw new Error(`The service is not reachable at ${baseUrl}. Start it with npm run dev, or set ALMS_URL.`);
  }
  if (!res.ok) throw new Error(`Could not read the internal API description (${res.status}): ${await res.text()}`);
  const doc = (await res.json()) as { paths: Record<string, Record<string, Operation>> };
  const commands = new Map<string, Command>();
  for (const [path, methods] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(methods)) {
      if (op.operationId) commands.set(op.operationId, { method: method.toUpperCase(), path, op });
    }
  }
  return commands;
}

function parseArgs(argv: string[]): { positional: string[]; flags: Record<string, string> } {
  const positional: string[] = [];
  const flags: Record<string, string> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (!arg.startsWith("--")) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf("=");
    if (eq > 0) flags[arg.slice(2, eq)] = arg.slice(eq + 1);
    else if (argv[i + 1] !== undefined && !argv[i + 1]!.startsWith("--")) flags[arg.slice(2)] = argv[++i]!;
    else flags[arg.slice(2)] = "true";
  }
  return { positional, flags };
}

function value(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function describeOperation(name: string, { method, path, op }: Command): string {
  const lines = [`${name}: ${method} ${path}`, op.summary ?? "", op.description ?? ""].filter(Boolean);
  for (const p of op.parameters ?? []) {
    if (p.in === "path" || p.in === "query")
      lines.push(
        `  --${p.name}${p.required ? " (required)" : ""}  [${p.in}]${p.description ? ` ${p.description}` : ""}`,
      );
  }
  const body = op.requestBody?.content?.["application/json"]?.schema;
  for (const [field, schema] of Object.entries(body?.properties ?? {})) {
    const type = schema.enum
      ? schema.enum.join("|")
      : Array.isArray(schema.type)
        ? schema.type.join("|")
        : (schema.type ?? (schema.anyOf ? "value" : "object"));
    lines.push(
      `  --${field}${body?.required?.includes(field) ? " (required)" : ""}  [body: ${type}]` +
        (schema.description ? ` ${schema.description}` : ""),
    );
  }
  return lines.join("\n");
}

/** A number flag inside [min, max], or the default; undefined when it is out of range. */
function numberFlag(raw: string | undefined, fallback: number, min: number, max: number): number | undefined {
  const n = raw === undefined ? fallback : Number(raw);
  return Number.isFinite(n) && n >= min && n <= max ? n : undefined;
}

async function runListen(flags: Record<string, string>): Promise<number> {
  if (flags.help !== undefined) {
    console.log(LISTEN_USAGE);
    return 0;
  }
  const key = keyFrom(flags);
  const forwardTo = flags["forward-to"];
  const interval = numberFlag(flags.interval, 2, 0.5, 60);
  const maxPerPoll = numberFlag(flags["max-per-poll"], 100, 1, 500);
  const since = flags.since ? new Date(flags.since) : new Date();
  const afterSequence = flags["after-sequence"] === undefined ? undefined : Number(flags["after-sequence"]);
  const filters = flags.filter === undefined ? undefined : parseFilters(flags.filter);
  const payload = flags.payload ?? "full";
  const problem = !key
    ? "No key: pass --key or set ALMS_API_KEY."
    : !forwardTo || !/^https?:\/\/./.test(forwardTo)
      ? "--forward-to needs an http or https URL."
      : interval === undefined || maxPerPoll === undefined || !Number.isInteger(maxPerPoll)
        ? "--interval is 0.5 to 60 seconds, --max-per-poll 1 to 500."
        : Number.isNaN(since.getTime())
          ? "--since is an ISO 8601 instant."
          : afterSequence !== undefined && !(Number.isSafeInteger(afterSequence) && afterSequence >= 0)
            ? "--after-sequence is a sequence, 0 or more."
            : flags.filter !== undefined && !filters
              ? "--filter is data.<field>=<value>,<value>, conditions separated by ;."
              : payload !== "full" && payload !== "thin"
                ? "--payload is full or thin."
                : undefined;
  if (problem) {
    console.error(`${problem}\n\n${LISTEN_USAGE}`);
    return 2;
  }
  const call = publicApi(baseUrl, key!);
  const probe = await call("GET", "/api/v1/events?limit=1").catch(() => undefined);
  if (!probe)
    throw new Error(`The service is not reachable at ${baseUrl}. Start it with npm run dev, or set ALMS_URL.`);
  if (probe.status !== 200) {
    console.error(`The events API refused the key: ${describeAnswer(probe)}`);
    return 1;
  }
  const secret =
    flags.secret && flags.secret !== "true" ? flags.secret : (process.env.ALMS_WEBHOOK_SECRET ?? newSecret());
  const types = flags.events ? new Set(flags.events.split(",").map((t) => t.trim())) : undefined;
  console.log(`Ready! Forwarding ${types ? [...types].join(", ") : "every event"} of your agency to ${forwardTo}`);
  console.log(`Your webhook signing secret is ${secret} (^C to quit)`);
  const stop = new AbortController();
  process.once("SIGINT", () => stop.abort());
  process.once("SIGTERM", () => stop.abort());
  const code = await listen(
    {
      call,
      forwardTo: forwardTo!,
      secret,
      types,
      since,
      intervalMs: interval! * 1000,
      maxPerPoll: maxPerPoll!,
      filters,
      payload: payload as "full" | "thin",
      afterSequence,
      print: (line) => console.log(line),
    },
    stop.signal,
  );
  console.log("Stopped.");
  return code;
}

async function runTrigger(type: string | undefined, flags: Record<string, string>): Promise<number> {
  if (flags.help !== undefined) {
    console.log(TRIGGER_USAGE);
    return 0;
  }
  if (!type) {
    console.error(TRIGGER_USAGE);
    return 2;
  }
  const key = keyFrom(flags);
  if (!key) {
    console.error(`No key: pass --key or set ALMS_API_KEY.\n\n${TRIGGER_USAGE}`);
    return 2;
  }
  return trigger(publicApi(baseUrl, key), type, (line) => console.log(line));
}

async function main(): Promise<number> {
  const { positional, flags } = parseArgs(process.argv.slice(2));
  const name = positional[0];
  if (name === "listen") return runListen(flags);
  if (name === "trigger") return runTrigger(positional[1], flags);
  if (!name) {
    console.log(USAGE);
    if (flags.help === undefined) return 2;
    try {
      const commands = await loadCommands();
      console.log("\nOperations:");
      for (const [id, cmd] of [...commands].sort(([a], [b]) => a.localeCompare(b)))
        console.log(`  ${id.padEnd(22)} ${cmd.method.padEnd(6)} ${cmd.path}  ${cmd.op.summary ?? ""}`);
    } catch (e) {
      console.log(`\n(The list of operations comes from the running service: ${(e as Error).message})`);
    }
    return 0;
  }
  // `request <id>`: the request id may be given without its flag.
  if (name === "request" && positional[1] && flags.request_id === undefined) flags.request_id = positional[1];
  const commands = await loadCommands();
  const cmd = commands.get(name);
  if (!cmd) {
    console.error(`Unknown operation '${name}'. Run npm run ops -- --help for the list.`);
    return 2;
  }
  if (flags.help !== undefined) {
    console.log(describeOperation(name, cmd));
    return 0;
  }
  const { json, ...fields } = flags;
  let path = cmd.path;
  const query = new URLSearchParams();
  const body: Record<string, unknown> = json ? (JSON.parse(json) as Record<string, unknown>) : {};
  for (const [key, raw] of Object.entries(fields)) {
    const param = cmd.op.parameters?.find((p) => p.name === key);
    if (param?.in === "path") path = path.replace(`{${key}}`, encodeURIComponent(raw));
    else if (param?.in === "query") query.set(key, raw);
    else body[key] = value(raw);
  }
  const missing = path.match(/\{(\w+)\}/g);
  if (missing) {
    console.error(
      `Missing ${missing.map((m) => `--${m.slice(1, -1)}`).join(", ")}.\n\n${describeOperation(name, cmd)}`,
    );
    return 2;
  }
  const hasBody = cmd.op.requestBody !== undefined;
  const res = await fetch(`${baseUrl}${path}${query.size ? `?${query}` : ""}`, {
    method: cmd.method,
    headers: { Authorization: `Bearer ${token}`, ...(hasBody ? { "Content-Type": "application/json" } : {}) },
    body: hasBody ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let out: string = text;
  try {
    out = JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    // not JSON: print as is
  }
  (res.ok ? console.log : console.error)(out);
  return res.ok ? 0 : 1;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    console.error(err.message);
    process.exit(1);
  },
);
