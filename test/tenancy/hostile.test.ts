import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { beforeAll, describe, expect, it, vi } from "vitest";
import { routes } from "../../src/app";
import { apiKeys } from "../../src/db/schema";
import { ENDPOINT_NAMES, MAX_BUDGET } from "../../src/domain/budgets";
import { SCOPES } from "../../src/domain/roles";
import type { RouteMeta } from "../../src/http/registry";
import { MAX_JSON_DEPTH } from "../../src/http/wire";
import worker from "../../src/index";
import { STRIPE_BODY_LIMIT } from "../../src/routes/hooks/stripe";
import {
  BASE,
  call,
  db,
  expectError,
  internal,
  makeListing,
  makePlatformKey,
  makeTenant,
  OPERATOR_TOKEN,
  outbox,
  type Tenant,
} from "../support/harness";

/** Names every plain object inherits: a lookup by a client-chosen name must never find them. */
const PROTOTYPE_NAMES = [
  "constructor",
  "__proto__",
  "toString",
  "hasOwnProperty",
  "valueOf",
  "isPrototypeOf",
  "propertyIsEnumerable",
  "toLocaleString",
  "__defineGetter__",
  "__lookupSetter__",
];

const OPERATIONS = routes.operations();
const JSON_ROUTES = OPERATIONS.filter((op) => op.schemas.json);
const QUERY_ROUTES = OPERATIONS.filter((op) => op.schemas.query);
/** fetch cannot build a GET or HEAD request with a body, so bodies go to every other route. */
const BODY_METHOD_ROUTES = OPERATIONS.filter((op) => op.method !== "get");
const label = (op: RouteMeta) => `${op.method.toUpperCase()} ${op.path}`;
const pathOf = (op: RouteMeta, value = "x") => op.path.replaceAll(/\{\w+\}/g, encodeURIComponent(value));

let tenant: Tenant;
let key: string;

beforeAll(async () => {
  tenant = await makeTenant();
  // A platform admin's key with every scope passes every public route's guards, and its
  // budgets are lifted so that hundreds of hostile requests never meet a 429.
  const admin = await makePlatformKey(tenant.agencyId, { scopes: [...SCOPES] });
  await db()
    .update(apiKeys)
    .set({ rateLimitOverrides: Object.fromEntries(ENDPOINT_NAMES.map((name) => [name, MAX_BUDGET])) })
    .where(eq(apiKeys.id, admin.keyId));
  key = admin.key;
});

/**
 * A request with a streamed body, handed to the Worker's fetch handler in this isolate, so that
 * the Worker's cancel of a body it stops reading reaches the stream itself. Across the runtime's
 * HTTP boundary (`exports.default.fetch`) the test's own upload, cut short on purpose, would be
 * logged by workerd as an aborted pipe ("read end of pipe was aborted").
 */
async function fetchStreamed(req: Request): Promise<Response> {
  const ctx = createExecutionContext();
  const res = await worker.fetch(req, env, ctx);
  await waitOnExecutionContext(ctx);
  return res;
}

interface Sent {
  status: number;
  text: string;
  json: any;
  headers: Headers;
}

/** One request to `op` past its authentication, with whatever body and headers a hostile client picks. */
async function send(
  op: RouteMeta,
  opts: {
    path?: string;
    query?: string;
    body?: BodyInit;
    contentType?: string | null;
    headers?: Record<string, string>;
  } = {},
): Promise<Sent> {
  const headers = new Headers();
  if (op.surface === "public") headers.set("X-API-Key", key);
  else headers.set("Authorization", `Bearer ${OPERATOR_TOKEN}`);
  if (op.surface === "public" && op.method !== "get") headers.set("X-Idempotency-Key", crypto.randomUUID());
  if (opts.body !== undefined && opts.contentType !== null)
    headers.set("Content-Type", opts.contentType ?? "application/json");
  for (const [name, value] of Object.entries(opts.headers ?? {})) headers.set(name, value);
  const url = `${BASE}${opts.path ?? pathOf(op)}${opts.query ?? ""}`;
  const req = new Request(url, { method: op.method.toUpperCase(), headers, body: opts.body });
  const res = opts.body instanceof ReadableStream ? await fetchStreamed(req) : await exports.default.fetch(req);
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, json, headers: res.headers };
}

/** A 4xx in the envelope: never a 5xx, never a bare body. */
function refused(r: Sent, what: string) {
  expect(r.status, `${what}: ${r.text}`).toBeGreaterThanOrEqual(400);
  expect(r.status, `${what}: ${r.text}`).toBeLessThan(500);
  expect(typeof r.json?.error?.code, `${what}: ${r.text}`).toBe("string");
}

/** Every field error of a validation answer, nested ones included. */
function fieldErrors(r: Sent): { field: string; code: string }[] {
  const out: { field: string; code: string }[] = [];
  const walk = (list: any[] | undefined) => {
    for (const e of list ?? []) {
      out.push(e);
      walk(e.children);
    }
  };
  walk(r.json?.error?.details?.errors);
  return out;
}

/** A stream of `total` spaces in 16 KiB chunks that counts how much of it the Worker pulled. */
function countingStream(total: number) {
  let pulled = 0;
  const stream = new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (pulled >= total) return controller.close();
        const n = Math.min(16 * 1024, total - pulled);
        pulled += n;
        controller.enqueue(new Uint8Array(n).fill(0x20));
      },
    },
    { highWaterMark: 0 },
  );
  return { stream, pulled: () => pulled };
}

// The zod definitions behind a route's body schema, read the way the validation mapping reads them.
type Def = { type: string; [k: string]: any };
const defOf = (schema: unknown): Def => (schema as { _zod: { def: Def } })._zod.def;
function unwrap(schema: unknown): unknown {
  let s = schema;
  for (let d = defOf(s); ["optional", "nullable", "default", "prefault", "readonly", "pipe"].includes(d.type); ) {
    s = d.type === "pipe" ? d.in : d.innerType;
    d = defOf(s);
  }
  return s;
}
/** The declared fields of a body schema (of its first variant, for a discriminated union). */
function shapeOf(op: RouteMeta): Record<string, unknown> {
  const d = defOf(unwrap(op.schemas.json));
  if (d.type === "object") return d.shape;
  if (d.type === "union") return defOf(unwrap(d.options[0])).shape;
  return {};
}
/** The smallest body that reaches a union's variant: its discriminator; `{}` otherwise. */
function baseBody(op: RouteMeta): Record<string, unknown> {
  const d = defOf(unwrap(op.schemas.json));
  if (d.type !== "union" || !d.discriminator) return {};
  const value = defOf(unwrap(shapeOf(op)[d.discriminator])).values?.[0];
  return { [d.discriminator]: value };
}
const fieldsOfType = (op: RouteMeta, types: string[]) =>
  Object.entries(shapeOf(op))
    .filter(([, s]) => types.includes(defOf(unwrap(s)).type))
    .map(([name]) => name);
/** Declared fields that hold objects, or lists of objects: where a nested key can be sent. */
const objectFields = (op: RouteMeta) =>
  Object.entries(shapeOf(op)).flatMap(([name, s]) => {
    const d = defOf(unwrap(s));
    if (d.type === "object") return [{ name, wrap: (inner: unknown) => inner }];
    if (d.type === "array" && defOf(unwrap(d.element)).type === "object")
      return [{ name, wrap: (inner: unknown) => [inner] }];
    return [];
  });
/** JSON text with exactly these entries; built from entries, so `__proto__` is an ordinary key. */
const jsonOf = (entries: [string, unknown][]) => JSON.stringify(Object.fromEntries(entries));

async function stillAnswering() {
  const pub = await call("/api/v1/users", { key });
  expect(pub.status, pub.text).toBe(200);
  const op = await internal("/internal/v1/agencies?limit=1");
  expect(op.status, op.text).toBe(200);
}

describe("body size is enforced while the body streams in, on every route", () => {
  it("the registry covers both surfaces and every route declares its limit", () => {
    expect(OPERATIONS.filter((op) => op.surface === "public").length).toBeGreaterThan(20);
    expect(OPERATIONS.filter((op) => op.surface === "internal").length).toBeGreaterThan(20);
    for (const op of OPERATIONS) expect(op.bodyLimit, label(op)).toBeGreaterThan(0);
  });

  it("a declared Content-Length above the limit is 413 with details.limit_bytes", async () => {
    for (const op of BODY_METHOD_ROUTES) {
      const r = await send(op, { body: " ".repeat(op.bodyLimit + 1) });
      expectError({ ...r, headers: r.headers }, 413, "request_body_too_large");
      expect(r.json.error.details.limit_bytes, label(op)).toBe(op.bodyLimit);
    }
    await stillAnswering();
  });

  it("a chunked body without Content-Length is cut off at the limit, not read to its end", async () => {
    for (const op of BODY_METHOD_ROUTES) {
      const total = op.bodyLimit * 4 + 512 * 1024;
      const { stream, pulled } = countingStream(total);
      const r = await send(op, { body: stream });
      expect(r.status, `${label(op)}: ${r.text}`).toBe(413);
      expect(r.json.error.code, label(op)).toBe("request_body_too_large");
      expect(r.json.error.details.limit_bytes, label(op)).toBe(op.bodyLimit);
      expect(pulled(), `${label(op)} read past its limit`).toBeLessThan(total);
    }
    await stillAnswering();
  });

  it("a body exactly at the limit passes the size check", async () => {
    for (const op of JSON_ROUTES) {
      const r = await send(op, { body: `{}${" ".repeat(op.bodyLimit - 2)}` });
      expect(r.status, `${label(op)}: ${r.text}`).not.toBe(413);
      expect(r.status, `${label(op)}: ${r.text}`).toBeLessThan(500);
    }
  });

  it("a route that takes no body refuses one above its small limit instead of hashing it", async () => {
    const noBody = BODY_METHOD_ROUTES.filter((op) => !op.schemas.json);
    expect(noBody.length).toBeGreaterThan(5);
    for (const op of noBody) {
      expect(op.bodyLimit, label(op)).toBe(1024);
      const { stream, pulled } = countingStream(4 * 1024 * 1024);
      const r = await send(op, { body: stream, contentType: "application/octet-stream" });
      expect(r.status, `${label(op)}: ${r.text}`).toBe(413);
      expect(pulled(), label(op)).toBeLessThan(4 * 1024 * 1024);
    }
  });

  it("the payment receiver reads its body through the same cap", async () => {
    const { stream, pulled } = countingStream(4 * 1024 * 1024);
    const res = await fetchStreamed(
      new Request(`${BASE}/hooks/stripe`, {
        method: "POST",
        headers: { "Content-Type": "application/json", "Stripe-Signature": "t=1,v1=00" },
        body: stream,
      }),
    );
    const json = (await res.json()) as any;
    expect(res.status, JSON.stringify(json)).toBe(413);
    expect(json.error.details.limit_bytes).toBe(STRIPE_BODY_LIMIT);
    expect(pulled()).toBeLessThan(4 * 1024 * 1024);
  });
});

describe("names found on Object.prototype are ordinary unknown names", () => {
  it("as body keys, top level and nested, on every route with a body: validation_unknown_field", async () => {
    for (const op of JSON_ROUTES) {
      const base = Object.entries(baseBody(op));
      for (const name of PROTOTYPE_NAMES) {
        const top = await send(op, { body: jsonOf([...base, [name, 1]]) });
        refused(top, `${label(op)} {${name}}`);
        expect(top.status, `${label(op)} {${name}}: ${top.text}`).toBe(422);
        expect(fieldErrors(top), `${label(op)} {${name}}: ${top.text}`).toContainEqual(
          expect.objectContaining({ field: name, code: "validation_unknown_field" }),
        );
        const under = await send(op, { body: jsonOf([...base, ["wrapper", jsonOf([[name, 1]])]]) });
        refused(under, `${label(op)} wrapper.${name}`);
        for (const field of objectFields(op)) {
          const nested = await send(op, {
            body: jsonOf([...base, [field.name, field.wrap(Object.fromEntries([[name, 1]]))]]),
          });
          refused(nested, `${label(op)} ${field.name}.${name}`);
          expect(nested.status, `${label(op)} ${field.name}.${name}: ${nested.text}`).toBe(422);
          expect(
            fieldErrors(nested).some((e) => e.code === "validation_unknown_field" && e.field.endsWith(name)),
            `${label(op)} ${field.name}.${name}: ${nested.text}`,
          ).toBe(true);
        }
      }
    }
    await stillAnswering();
  });

  it("as query parameter names on every route with a query: request_query_invalid", async () => {
    expect(QUERY_ROUTES.length).toBeGreaterThan(5);
    for (const op of QUERY_ROUTES) {
      for (const name of PROTOTYPE_NAMES) {
        const r = await send(op, { query: `?${encodeURIComponent(name)}=1` });
        expect(r.status, `${label(op)} ?${name}: ${r.text}`).toBe(422);
        expect(r.json.error.code, `${label(op)} ?${name}`).toBe("request_query_invalid");
        expect(fieldErrors(r), `${label(op)} ?${name}: ${r.text}`).toContainEqual(
          expect.objectContaining({ field: name, code: "validation_unknown_field" }),
        );
      }
    }
  });

  it("repeated, empty and prototype-named values of every declared query field: never a 5xx", async () => {
    for (const op of QUERY_ROUTES) {
      const shape = defOf(unwrap(op.schemas.query)).shape as Record<string, unknown>;
      for (const field of Object.keys(shape)) {
        for (const query of [`?${field}=a&${field}=b`, `?${field}`, `?${field}=`, `?${field}=__proto__`]) {
          const r = await send(op, { query });
          expect(r.status, `${label(op)} ${query}: ${r.text}`).toBeLessThan(500);
        }
      }
    }
  });

  it("as values of enum fields, in bodies and queries: validation_enum_not_allowed", async () => {
    let checked = 0;
    for (const op of JSON_ROUTES) {
      const base = Object.entries(baseBody(op));
      for (const field of fieldsOfType(op, ["enum", "literal"])) {
        if (base.some(([name]) => name === field)) continue;
        for (const name of PROTOTYPE_NAMES) {
          const r = await send(op, { body: jsonOf([...base, [field, name]]) });
          expect(r.status, `${label(op)} ${field}=${name}: ${r.text}`).toBe(422);
          expect(fieldErrors(r), `${label(op)} ${field}=${name}: ${r.text}`).toContainEqual(
            expect.objectContaining({ field, code: "validation_enum_not_allowed" }),
          );
          checked++;
        }
      }
    }
    for (const op of QUERY_ROUTES) {
      const shape = defOf(unwrap(op.schemas.query)).shape as Record<string, unknown>;
      for (const [field, s] of Object.entries(shape)) {
        if (defOf(unwrap(s)).type !== "enum") continue;
        for (const name of PROTOTYPE_NAMES) {
          const r = await send(op, { query: `?${field}=${encodeURIComponent(name)}` });
          expect(r.status, `${label(op)} ?${field}=${name}: ${r.text}`).toBe(422);
          expect(r.json.error.code).toBe("request_query_invalid");
          checked++;
        }
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it("as the value of every declared field, and of every path parameter: never a 5xx", async () => {
    for (const op of JSON_ROUTES) {
      const base = Object.entries(baseBody(op));
      for (const field of Object.keys(shapeOf(op))) {
        for (const name of ["constructor", "__proto__", "toString"]) {
          const r = await send(op, { body: jsonOf([...base, [field, name]]) });
          expect(r.status, `${label(op)} ${field}=${name}: ${r.text}`).toBeLessThan(500);
        }
      }
    }
    for (const op of OPERATIONS.filter((o) => o.path.includes("{"))) {
      for (const name of PROTOTYPE_NAMES) {
        const body = op.schemas.json ? "{}" : undefined;
        const r = await send(op, { path: pathOf(op, name), body });
        expect(r.status, `${label(op)} with ${name}: ${r.text}`).toBeLessThan(500);
      }
    }
    await stillAnswering();
  });

  it("a budget override named after a prototype member is an unknown field, and nothing is stored", async () => {
    const t = await makeTenant();
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    for (const name of PROTOTYPE_NAMES) {
      const r = await call(`/api/v1/admin/api-keys/${t.keyId}/rate-limits`, {
        key: admin.key,
        method: "PATCH",
        rawBody: `{"overrides": ${jsonOf([[name, 5]])}}`,
        headers: { "Content-Type": "application/json" },
      });
      expectError(r, 422, "validation_nested_error");
      expect(fieldErrors(r as Sent)).toContainEqual(
        expect.objectContaining({ field: `overrides.${name}`, code: "validation_unknown_field" }),
      );
    }
    const [row] = await db().select().from(apiKeys).where(eq(apiKeys.id, t.keyId));
    expect(row!.rateLimitOverrides ?? {}).toEqual({});
  });
});

describe("malformed bodies and headers get a clear 4xx, and the service keeps answering", () => {
  it(`JSON nested past ${MAX_JSON_DEPTH} levels is request_body_too_deep on every route with a body`, async () => {
    for (const op of JSON_ROUTES) {
      const levels = Math.floor(op.bodyLimit / 2) - 8;
      const deep = await send(op, { body: "[".repeat(levels) + "]".repeat(levels) });
      expectError({ ...deep }, 400, "request_body_too_deep");
      expect(deep.json.error.details.max_depth, label(op)).toBe(MAX_JSON_DEPTH);
      // Inside an otherwise ordinary object, one level past the cap.
      const inField = `{"a": ${"[".repeat(MAX_JSON_DEPTH)}${"]".repeat(MAX_JSON_DEPTH)}}`;
      expectError(await send(op, { body: inField }), 400, "request_body_too_deep");
      // At the cap the wire accepts it, and validation answers.
      const atCap = `{"a": ${"[".repeat(MAX_JSON_DEPTH - 1)}${"]".repeat(MAX_JSON_DEPTH - 1)}}`;
      expect((await send(op, { body: atCap })).status, label(op)).toBe(422);
      // The spec's 100 000 levels: above every JSON limit here, so refused by size before any parse.
      const huge = await send(op, { body: "[".repeat(100_000) });
      refused(huge, `${label(op)} 100 000 levels`);
    }
    await stillAnswering();
  });

  it("a body that is not UTF-8 is request_body_not_json saying so, on every route with a body", async () => {
    // {"a":"<ff fe>"} and an overlong encoding of "/".
    const bodies = [
      new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
      new Uint8Array([0x7b, 0x22, 0xc0, 0xaf, 0x22, 0x3a, 0x31, 0x7d]),
    ];
    for (const op of JSON_ROUTES) {
      for (const body of bodies) {
        const r = await send(op, { body });
        expectError(r, 400, "request_body_not_json");
        expect(r.json.error.message, label(op)).toMatch(/UTF-8/);
        expect(r.json.error.details.parse_error_position, label(op)).toBe(body[2] === 0xc0 ? 2 : 6);
      }
    }
    await stillAnswering();
  });

  it("a wrong Content-Type is request_content_type_mismatch on every route with a body", async () => {
    for (const op of JSON_ROUTES) {
      const malformed = ["application/json;;;", "application/json; =x", "application/json;charset"];
      for (const contentType of [
        "text/plain",
        "application/x-www-form-urlencoded",
        "multipart/form-data; b=x",
        ...malformed,
      ]) {
        expectError(await send(op, { body: "{}", contentType }), 415, "request_content_type_mismatch");
      }
      expectError(await send(op, { body: "{}", contentType: null }), 415, "request_content_type_mismatch");
    }
    await stillAnswering();
  });

  it("control characters in header values are refused with a 4xx on every route", async () => {
    // What a client can actually put on the wire: fetch refuses NUL, CR and LF in a header
    // value (TypeError before anything is sent), and trims leading and trailing whitespace.
    for (const value of ["a\0b", "a\rb", "a\nb"]) expect(() => new Headers({ "X-Idempotency-Key": value })).toThrow();
    for (const op of OPERATIONS) {
      // An anonymous route (the error catalog) reads no credential, so only its body headers count.
      const cases: Record<string, string>[] =
        op.surface === "internal"
          ? [{ Authorization: `Bearer ${OPERATOR_TOKEN}\x7f` }, { Authorization: "Bearer \x01\x02\x03" }]
          : op.anonymous
            ? []
            : [
                { "X-API-Key": `${key}\x7f` },
                { "X-API-Key": `\x01${key.slice(1)}` },
                { "X-API-Key": "sk_test_\x1b[31m" },
              ];
      if (op.surface === "public" && op.method !== "get")
        cases.push({ "X-Idempotency-Key": "abc\x01def" }, { "X-Idempotency-Key": "\x7f" });
      if (op.schemas.json) cases.push({ "Content-Type": "application/json\x01" });
      for (const headers of cases) {
        const r = await send(op, { headers, body: op.method === "get" ? undefined : "{}" });
        refused(r, `${label(op)} ${JSON.stringify(headers)}`);
      }
    }
    await stillAnswering();
  });
});

describe("query strings", () => {
  it("a tour search of any accepted length binds no LIKE pattern above D1's 50-byte limit", async () => {
    const statements: string[] = [];
    const prepare = env.DB.prepare.bind(env.DB);
    vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
      statements.push(query);
      return prepare(query);
    });
    try {
      for (const search of ["harbour", "%_\\", "é".repeat(60), "a".repeat(100)]) {
        const r = await call(`/api/v1/tours?search=${encodeURIComponent(search)}`, { key });
        expect(r.status, r.text).toBe(200);
      }
    } finally {
      vi.restoreAllMocks();
    }
    expect(statements.length).toBeGreaterThan(0);
    expect(statements.filter((q) => /\blike\b|\bglob\b/i.test(q))).toEqual([]);
  });
});

describe("a refused request changes nothing already stored", () => {
  it("a listing is unchanged after every kind of refused PATCH and POST, and no event is written", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t, { activate: true });
    const path = `/api/v1/listings/${listing.listing_number}`;
    const before = await call(path, { key: t.key });
    const eventsBefore = (await outbox(t.agencyId)).length;
    const hostile: { body?: BodyInit; headers?: Record<string, string> }[] = [
      { body: JSON.stringify({ new_status: "Sold", pad: " ".repeat(70 * 1024) }) },
      { body: countingStream(1024 * 1024).stream },
      {
        body: jsonOf([
          ["new_status", "Sold"],
          ["__proto__", { is_activated: false }],
        ]),
      },
      { body: jsonOf([["new_status", "constructor"]]) },
      { body: `{"new_status": "Sold", "x": ${"[".repeat(200)}${"]".repeat(200)}}` },
      { body: new Uint8Array([0x7b, 0x22, 0x6e, 0xff, 0x22, 0x3a, 0x31, 0x7d]) },
      { body: JSON.stringify({ new_status: "Sold" }), headers: { "Content-Type": "text/plain" } },
      { body: JSON.stringify({ new_status: "Sold" }), headers: { "X-Idempotency-Key": "a\x01b" } },
    ];
    for (const target of ["status", "sections/matterport", "sections/floorplan", "cancel"]) {
      for (const { body, headers } of hostile) {
        const req = new Request(`${BASE}${path}/${target}`, {
          method: target === "cancel" ? "POST" : "PATCH",
          headers: {
            "X-API-Key": t.key,
            "Content-Type": "application/json",
            "X-Idempotency-Key": crypto.randomUUID(),
            ...headers,
          },
          body: body instanceof ReadableStream ? countingStream(1024 * 1024).stream : body,
        });
        const r = body instanceof ReadableStream ? await fetchStreamed(req) : await exports.default.fetch(req);
        const text = await r.text();
        expect(r.status, `${target}: ${text}`).toBeGreaterThanOrEqual(400);
        expect(r.status, `${target}: ${text}`).toBeLessThan(500);
      }
    }
    const after = await call(path, { key: t.key });
    expect(after.json).toEqual(before.json);
    expect((await outbox(t.agencyId)).length).toBe(eventsBefore);
  });

  it("a body refused for its size does not use up its idempotency key", async () => {
    const t = await makeTenant();
    const idempotencyKey = crypto.randomUUID();
    const headers = { "Content-Type": "application/json" };
    const big = await call("/api/v1/listings", { key: t.key, idempotencyKey, rawBody: " ".repeat(65537), headers });
    expectError(big, 413, "request_body_too_large");
    const chunked = await fetchStreamed(
      new Request(`${BASE}/api/v1/listings`, {
        method: "POST",
        headers: { ...headers, "X-API-Key": t.key, "X-Idempotency-Key": idempotencyKey },
        body: countingStream(1024 * 1024).stream,
      }),
    );
    expect(chunked.status, await chunked.text()).toBe(413);
    const good = await call("/api/v1/listings", {
      key: t.key,
      idempotencyKey,
      body: { address: "1 Quay Street", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
    });
    expect(good.status, good.text).toBe(201);
  });
});
