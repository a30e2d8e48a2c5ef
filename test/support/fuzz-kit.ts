import { runDurableObjectAlarm } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import fc from "fast-check";
import { expect, vi } from "vitest";
import { type Doc, deref, hostileString, oneMutation, PROTO_NAMES, schemaArb, toJson, validate } from "./fuzz-schema";
import { BASE, call, internal, makeTenant, mockFetch, OPERATOR_TOKEN, type Tenant } from "./harness";

const MUTATING = new Set(["POST", "PUT", "PATCH", "DELETE"]);

export interface Operation {
  method: string;
  path: string;
  params: { name: string; in: string; required: boolean; schema: any }[];
  body: any;
  responses: Record<string, any>;
}

/** Every operation of a served document, with parameters and request body resolved. */
export function operations(doc: Doc): Operation[] {
  const ops: Operation[] = [];
  for (const [path, item] of Object.entries<any>(doc.paths)) {
    for (const [method, op] of Object.entries<any>(item)) {
      if (!op || typeof op !== "object" || !op.responses) continue;
      const params = [...(item.parameters ?? []), ...(op.parameters ?? [])].map((p) => deref(doc, p));
      ops.push({
        method: method.toUpperCase(),
        path,
        params: params.map((p) => ({ name: p.name, in: p.in, required: !!p.required, schema: p.schema })),
        body: op.requestBody ? deref(doc, op.requestBody).content?.["application/json"]?.schema : undefined,
        responses: op.responses,
      });
    }
  }
  return ops;
}

/** Percent-encodes a path segment; a lone surrogate goes as its (ill-formed) UTF-8 bytes, as a hostile client would send. */
function encodeSegment(value: string) {
  return value.replace(/[\ud800-\udbff][\udc00-\udfff]|[\s\S]/g, (c) => {
    const code = c.charCodeAt(0);
    if (c.length === 1 && code >= 0xd800 && code <= 0xdfff) {
      return [0xed, 0xa0 | ((code >> 6) & 0x1f), 0x80 | (code & 0x3f)]
        .map((b) => `%${b.toString(16).toUpperCase()}`)
        .join("");
    }
    return encodeURIComponent(c);
  });
}

export interface FuzzRequest {
  op: string;
  path: string;
  query: [string, string][];
  contentType: string | null;
  body: string | undefined;
}

/** Known-good path parameter values, by parameter name. */
export type Pools = Record<string, string[]>;

const rawBodies = fc.constantFrom(
  "",
  "{",
  "null",
  "[]",
  '"text"',
  "0",
  '{"a":1,"a":2}',
  "\ufeff{}",
  `${"[".repeat(5000)}${"]".repeat(5000)}`,
  `${'{"a":'.repeat(3000)}1${"}".repeat(3000)}`,
  "{\u0000}",
);

const queryValue = (doc: Doc, schema: any) =>
  fc.oneof(
    { weight: 5, arbitrary: schemaArb(doc, schema).map((v) => (typeof v === "string" ? v : toJson(v))) },
    { weight: 1, arbitrary: hostileString },
  );

/** Body properties that name a user or the agency get the fuzzed agency's own ids most of the time. */
const hints = (pools: Pools) => {
  const users = pools.user_id ?? [];
  const userFields = ["owner_user_id", "agent_one_id", "agent_two_id", "manager_id", "minted_by_user_id", "user_id"];
  return { ...Object.fromEntries(userFields.map((f) => [f, users])), agency_id: pools.agency_id ?? [] };
};

/** A request for `op`: schema-shaped parameters and body, mutated with hostile values. */
function requestArb(doc: Doc, op: Operation, pools: Pools): fc.Arbitrary<FuzzRequest> {
  const pathParams = op.params.filter((p) => p.in === "path");
  const queryParams = op.params.filter((p) => p.in === "query");
  const pathArb = fc.tuple(
    ...pathParams.map((p) =>
      fc
        .oneof(
          { weight: 6, arbitrary: fc.constantFrom(...(pools[p.name]?.length ? pools[p.name]! : ["missing"])) },
          { weight: 1, arbitrary: schemaArb(doc, p.schema).map((v) => (typeof v === "string" ? v : toJson(v))) },
          { weight: 1, arbitrary: hostileString },
        )
        // An empty or dot segment addresses another route (or is folded away by URL parsing).
        .filter((v) => v !== "" && v !== "." && v !== ".."),
    ),
  );
  const queryArb = fc
    .tuple(
      fc.tuple(
        ...queryParams.map((p) =>
          p.required
            ? fc.oneof({ weight: 8, arbitrary: queryValue(doc, p.schema) }, { weight: 1, arbitrary: fc.constant(null) })
            : fc.option(queryValue(doc, p.schema), { freq: 2 }),
        ),
      ),
      fc.oneof(
        { weight: 6, arbitrary: fc.constant([] as [string, string][]) },
        {
          weight: 1,
          arbitrary: fc.array(
            fc.tuple(
              fc.oneof(fc.constantFrom(...PROTO_NAMES, ...queryParams.map((p) => p.name)), hostileString),
              hostileString,
            ),
            { minLength: 1, maxLength: 2 },
          ),
        },
      ),
    )
    .map(([values, extra]) => [
      ...queryParams.flatMap((p, i) => (values[i] === null ? [] : [[p.name, values[i]!] as [string, string]])),
      ...extra,
    ]);
  const bodyArb: fc.Arbitrary<string | undefined> = op.body
    ? fc.oneof(
        { weight: 10, arbitrary: schemaArb(doc, op.body, 0, hints(pools)).map(toJson) },
        { weight: 10, arbitrary: oneMutation(doc, op.body, hints(pools)).map(toJson) },
        { weight: 1, arbitrary: rawBodies },
      )
    : op.method === "GET" || op.method === "HEAD"
      ? fc.constant(undefined)
      : fc.oneof({ weight: 12, arbitrary: fc.constant(undefined) }, { weight: 1, arbitrary: rawBodies });
  const contentTypeArb = fc.oneof(
    { weight: 30, arbitrary: fc.constant("application/json") },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        null,
        "text/plain",
        "application/json; charset=utf-16",
        "application/x-www-form-urlencoded",
      ),
    },
  );
  return fc.record({ values: pathArb, query: queryArb, body: bodyArb, contentType: contentTypeArb }).map((r) => {
    let path = op.path;
    pathParams.forEach((p, i) => {
      path = path.replace(`{${p.name}}`, encodeSegment(r.values[i] as string));
    });
    return {
      op: `${op.method} ${op.path}`,
      path,
      query: r.query,
      body: r.body,
      contentType: r.body === undefined ? null : r.contentType,
    };
  });
}

export interface Sent {
  status: number;
  headers: Headers;
  text: string;
}

async function send(op: Operation, req: FuzzRequest, auth: Record<string, string>): Promise<Sent> {
  const headers = new Headers(auth);
  if (req.contentType) headers.set("Content-Type", req.contentType);
  if (MUTATING.has(op.method) && op.params.some((p) => p.name === "X-Idempotency-Key")) {
    headers.set("X-Idempotency-Key", crypto.randomUUID());
  }
  const qs = req.query.length ? `?${new URLSearchParams(req.query)}` : "";
  const res = await exports.default.fetch(
    new Request(`${BASE}${req.path}${qs}`, { method: op.method, headers, body: req.body }),
  );
  return { status: res.status, headers: res.headers, text: await res.text() };
}

/** Why a response breaks the contract, or null: no 5xx, documented status, envelope, schema. */
function violation(doc: Doc, op: Operation, r: Sent): string | null {
  if (r.status >= 500) return `status ${r.status}`;
  const documented = op.responses[String(r.status)] ?? op.responses.default;
  if (!documented) return `undocumented status ${r.status}`;
  const response = deref(doc, documented);
  if (r.status === 204 || !response.content) return r.text === "" ? null : `unexpected body on ${r.status}`;
  let json: unknown;
  try {
    json = JSON.parse(r.text);
  } catch {
    return `body is not JSON`;
  }
  if (r.status >= 400) {
    const e = (json as any)?.error;
    for (const field of ["code", "message", "request_id", "details", "doc_url"]) {
      if (!e || !Object.hasOwn(e, field)) return `error envelope lacks error.${field}`;
    }
    if (e.request_id !== r.headers.get("X-Request-Id")) return "error.request_id differs from X-Request-Id";
  }
  const schema = response.content["application/json"]?.schema;
  if (!schema) return `no JSON schema documented for ${r.status}`;
  const errors = validate(doc, schema, json);
  return errors.length ? `body does not match the schema for ${r.status}: ${errors.slice(0, 5).join("; ")}` : null;
}

export const FUZZ_SEED = Number((env as any).FUZZ_SEED) || 20261123;
export const FUZZ_RUNS = Number((env as any).FUZZ_RUNS) || 0;

export async function loadDoc(path: string, headers: Record<string, string> = {}): Promise<Doc> {
  const r = await call(path, { headers });
  if (r.status !== 200) throw new Error(`${path}: ${r.status} ${r.text}`);
  return r.json;
}

/** Answers every outbound fetch (webhook receivers, calendar feeds, storage) locally. */
function stubOutbound() {
  mockFetch((req) => {
    if (req.url.includes(".ics")) {
      return new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", { headers: { "Content-Type": "text/calendar" } });
    }
    return new Response("ok");
  });
}

/**
 * Waits, with the outbound stub still answering, until the background work the requests set off
 * is done: every outbox event handed to the queue (or set aside) and every webhook delivery made.
 * Left running past the test, those deliveries would reach the real network after the stub is gone.
 */
export async function backgroundSettled() {
  await vi.waitFor(
    async () => {
      const left = await env.DB.prepare(
        "SELECT (SELECT count(*) FROM events WHERE enqueued_at IS NULL AND set_aside_at IS NULL) AS events, " +
          "(SELECT count(*) FROM webhook_deliveries WHERE status = 'pending') AS deliveries",
      ).first<{ events: number; deliveries: number }>();
      const stuck = left?.events
        ? await env.DB.prepare(
            "SELECT event_type, attempts, claimed_until, last_error, created_at FROM events " +
              "WHERE enqueued_at IS NULL AND set_aside_at IS NULL ORDER BY created_at LIMIT 3",
          ).all()
        : undefined;
      expect(left, `background work still under way: ${JSON.stringify(stuck?.results ?? [])}`).toEqual({
        events: 0,
        deliveries: 0,
      });
    },
    { timeout: 60_000, interval: 250 },
  );
}

/** Raises every per-endpoint budget of `keyId` to the maximum the internal API allows. */
async function raiseBudgets(internalDoc: Doc, keyId: string) {
  const update = deref(internalDoc, internalDoc.paths["/internal/v1/api-keys/{key_id}"].patch.requestBody);
  const names = Object.keys(
    deref(internalDoc, update.content["application/json"].schema).properties.rate_limit_overrides.properties,
  );
  const r = await internal(`/internal/v1/api-keys/${keyId}`, {
    method: "PATCH",
    body: { rate_limit_overrides: Object.fromEntries(names.map((n) => [n, 100_000])) },
  });
  if (r.status !== 200) throw new Error(`raising budgets: ${r.status} ${r.text}`);
}

/** A tenant with listings, a tour, a webhook endpoint, an event and a calendar, and the ids to aim at. */
export async function fuzzTenant(internalDoc: Doc): Promise<{ tenant: Tenant; pools: Pools }> {
  stubOutbound();
  const t = await makeTenant();
  await raiseBudgets(internalDoc, t.keyId);
  const listing = await call("/api/v1/listings", {
    key: t.key,
    body: { address: "1 Fuzz Street", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
  });
  const active = await call("/api/v1/listings", {
    key: t.key,
    body: { address: "2 Fuzz Street", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
  });
  await internal(`/internal/v1/agencies/${t.agencyId}/listings/${active.json.listing_number}/activate`, {
    method: "POST",
  });
  const tour = await call("/api/v1/tours", {
    key: t.key,
    body: { address: "3 Fuzz Street", city: "Austin", state: "TX", zipcode: "78701" },
  });
  const hook = await call("/api/v1/webhooks/endpoints", { key: t.key, body: { url: "https://hooks.example.com/in" } });
  await internal(`/internal/v1/users/${t.owner.id}/calendar`, {
    method: "PUT",
    body: { provider: "ics", feed_url: "https://cal.example.com/feed.ics" },
  });
  const events = await call("/api/v1/events", { key: t.key });
  // Not the owner, who minted the fuzzing key: the deactivate helper would end the key (from the very next
  // request) and leave the rest of the run to answer 401.
  const users = [t.teamLead.id, t.agent.id, t.viewer.id];
  return {
    tenant: t,
    pools: {
      listing_number: [listing.json?.listing_number, active.json?.listing_number].filter(Boolean),
      tourNumber: [tour.json?.tour_number].filter(Boolean),
      endpoint_id: [hook.json?.id].filter(Boolean),
      event_id: (events.json?.data ?? events.json?.events ?? []).map((e: any) => e.event_id ?? e.id).slice(0, 3),
      user_id: users,
      key_id: [t.keyId],
      agency_id: [t.agencyId],
    },
  };
}

export const operatorAuth = { Authorization: `Bearer ${OPERATOR_TOKEN}` };

/** Runs `runs` generated requests against `ops` and asserts the contract on each response. */
export async function fuzz(
  doc: Doc,
  ops: Operation[],
  pools: Pools,
  auth: Record<string, string>,
  runs: number,
  seed = FUZZ_SEED,
) {
  const byName = new Map(ops.map((op) => [`${op.method} ${op.path}`, op]));
  const arb = fc.oneof(...ops.map((op) => requestArb(doc, op, pools)));
  let sent = 0;
  const statuses = new Map<number, number>();
  await fc.assert(
    fc.asyncProperty(arb, async (req) => {
      const op = byName.get(req.op)!;
      sent++;
      const r = await send(op, req, auth);
      statuses.set(r.status, (statuses.get(r.status) ?? 0) + 1);
      const problem = violation(doc, op, r);
      if (problem) throw new Error(`${req.op} → ${problem}\n${r.text.slice(0, 1500)}`);
    }),
    { seed, numRuns: runs, verbose: 0 },
  );
  const histogram = [...statuses].sort(([a], [b]) => a - b).map(([status, n]) => `${status}×${n}`);
  console.log(`seed ${seed}: ${sent} requests, statuses ${histogram.join(" ")}`);
  return sent;
}

/**
 * Stops every replay a fuzz run started and runs each replayer's pending alarm now, so no
 * replay's step (its attempt at an example host that does not resolve) is still running
 * when the file's runtime is torn down.
 */
export async function settleReplays() {
  for (const d1 of [env.DB, env.SHARD_2]) {
    await d1
      .prepare("UPDATE webhook_replays SET status = 'cancelled', reason = 'cancelled' WHERE status = 'running'")
      .run();
    const { results } = await d1
      .prepare("SELECT DISTINCT endpoint_id FROM webhook_replays")
      .all<{ endpoint_id: string }>();
    for (const { endpoint_id } of results) await runDurableObjectAlarm(env.WEBHOOK_REPLAYER.getByName(endpoint_id));
  }
}
