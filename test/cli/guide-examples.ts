import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";

/**
 * The runnable examples of the guides: each ```http block that starts with a request line
 * (`METHOD /api/v1/…`) is followed by a ```http block that starts with the status line it
 * answers (`HTTP/1.1 201 Created`). `{name}` in a request stands for a value of an earlier
 * answer of the same guide (`{listing_number}`, `{user_id}`…), `{api_key}` for the key
 * `npm run dev` prints, and `{uuid}` for a fresh UUID.
 */
export interface Exchange {
  guide: string;
  line: number;
  method: string;
  path: string;
  headers: [string, string][];
  body: string | undefined;
  status: number;
  expected: unknown;
}

const FENCE = /^```http\n([\s\S]*?)^```$/gm;
const REQUEST_LINE = /^(GET|POST|PUT|PATCH|DELETE) (\/\S*)$/;
const STATUS_LINE = /^HTTP\/1\.1 (\d{3})\b/;

function split(block: string): { head: string[]; body: string | undefined } {
  const blank = block.indexOf("\n\n");
  const head = (blank < 0 ? block : block.slice(0, blank)).trim().split("\n");
  const body = blank < 0 ? undefined : block.slice(blank + 2).trim() || undefined;
  return { head, body };
}

export function parseGuide(guide: string, text: string): Exchange[] {
  const blocks = [...text.matchAll(FENCE)].map((m) => ({
    text: m[1]!,
    line: text.slice(0, m.index).split("\n").length,
  }));
  const exchanges: Exchange[] = [];
  for (let i = 0; i < blocks.length; i++) {
    const request = split(blocks[i]!.text);
    const requestLine = REQUEST_LINE.exec(request.head[0]!);
    if (!requestLine) throw new Error(`${guide}:${blocks[i]!.line}: an http block must start with a request line`);
    const answer = blocks[i + 1];
    const statusLine = answer && STATUS_LINE.exec(answer.text);
    if (!answer || !statusLine) throw new Error(`${guide}:${blocks[i]!.line}: no answer block follows the request`);
    const response = split(answer.text);
    exchanges.push({
      guide,
      line: blocks[i]!.line,
      method: requestLine[1]!,
      path: requestLine[2]!,
      headers: request.head.slice(1).map((h) => {
        const colon = h.indexOf(":");
        return [h.slice(0, colon).trim(), h.slice(colon + 1).trim()];
      }),
      body: request.body,
      status: Number(statusLine[1]),
      expected: response.body === undefined ? undefined : JSON.parse(response.body),
    });
    i++;
  }
  return exchanges;
}

export function guides(root: string): { guide: string; exchanges: Exchange[] }[] {
  const dir = join(root, "docs");
  return readdirSync(dir)
    .filter((name) => name.endsWith(".md"))
    .sort()
    .map((name) => ({
      guide: `docs/${name}`,
      exchanges: parseGuide(`docs/${name}`, readFileSync(join(dir, name), "utf8")),
    }))
    .filter((g) => g.exchanges.length > 0);
}

/** Fills `{name}` from `values`, `{uuid}` with a fresh UUID; names an unknown placeholder. */
export function fill(text: string, values: Map<string, string>): string {
  return text.replace(/\{([a-z_]+)\}/g, (_, name: string) => {
    if (name === "uuid") return crypto.randomUUID();
    const value = values.get(name);
    if (value === undefined) throw new Error(`no earlier answer gave {${name}}`);
    return value;
  });
}

/** The path parameter an `id` answers to, by the id's prefix. */
const ID_NAMES: Record<string, string> = {
  usr: "user_id",
  apt: "appointment_id",
  sub: "subscription_id",
  we: "endpoint_id",
  evt: "event_id",
  upl: "upload_id",
};

/**
 * What an answer lends to later requests: its top-level strings and those of its first
 * `data` item, by name; an `id` also by what it identifies (`usr_…` as `user_id`).
 */
export function remember(values: Map<string, string>, body: unknown) {
  const take = (obj: unknown) => {
    if (!obj || typeof obj !== "object" || Array.isArray(obj)) return;
    for (const [k, v] of Object.entries(obj)) {
      if (typeof v !== "string") continue;
      values.set(k, v);
      const name = k === "id" ? ID_NAMES[v.split("_")[0]!] : undefined;
      if (name) values.set(name, v);
    }
  };
  take(body);
  const data = (body as { data?: unknown } | null)?.data;
  if (Array.isArray(data)) take(data[0]);
}

/** Values that name the outcome, compared exactly; everything else only by type. */
const EXACT = new Set(["status", "code", "new_status", "previous_status", "is_activated", "type", "operation"]);

/**
 * Where `actual` differs from the documented `expected` in shape: the same keys, the same
 * JSON types (arrays by their first items), and the same value for the keys in EXACT.
 */
export function shapeProblems(expected: unknown, actual: unknown, at = "$"): string[] {
  const kind = (v: unknown) => (v === null ? "null" : Array.isArray(v) ? "array" : typeof v);
  if (kind(expected) !== kind(actual)) return [`${at}: documented ${kind(expected)}, answered ${kind(actual)}`];
  if (Array.isArray(expected) && Array.isArray(actual)) {
    if (!expected.length || !actual.length) return [];
    return shapeProblems(expected[0], actual[0], `${at}[0]`);
  }
  if (kind(expected) !== "object") return [];
  const e = expected as Record<string, unknown>;
  const a = actual as Record<string, unknown>;
  const problems: string[] = [];
  for (const key of Object.keys(e)) if (!Object.hasOwn(a, key)) problems.push(`${at}.${key}: documented, not answered`);
  for (const key of Object.keys(a)) if (!Object.hasOwn(e, key)) problems.push(`${at}.${key}: answered, not documented`);
  for (const key of Object.keys(e).filter((k) => Object.hasOwn(a, k))) {
    const [ev, av] = [e[key], a[key]];
    if (EXACT.has(key) && kind(ev) !== "object" && ev !== av) {
      problems.push(`${at}.${key}: documented ${JSON.stringify(ev)}, answered ${JSON.stringify(av)}`);
    } else problems.push(...shapeProblems(ev, av, `${at}.${key}`));
  }
  return problems;
}
