import { eq } from "drizzle-orm";
import { afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { routes } from "../../src/app";
import { apiKeys } from "../../src/db/schema";
import { ENDPOINT_NAMES, MAX_BUDGET } from "../../src/domain/budgets";
import { SCOPES } from "../../src/domain/roles";
import type { RouteMeta } from "../../src/http/registry";
import { ERRORS, type ErrorCode } from "../../src/lib/errors";
import {
  call,
  db,
  expectError,
  internal,
  makePlatformKey,
  makeTenant,
  mockFetch,
  OPERATOR_TOKEN,
  type Tenant,
  unique,
} from "../support/harness";
import { validate } from "../support/json-schema";

/*
 * Contract checks generated from the route registry: every registered operation gets
 * every check that applies to its guards, so a new route is covered by being registered.
 * Requests are built from the served OpenAPI documents (bodies from each field's
 * example) and from fixtures chosen by path parameter or field name, never per route.
 */

const OPERATIONS = routes.operations();
const PUBLIC = routes.operations("public");
const INTERNAL = routes.operations("internal");
const MUTATING = new Set(["post", "put", "patch", "delete"]);
const label = (op: RouteMeta) => `${op.method.toUpperCase()} ${op.path}`;
const paramsOf = (path: string) => [...path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]!);
const snake = (name: string) => name.replaceAll(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
const find = (method: string, path: string) => OPERATIONS.find((o) => o.method === method && o.path === path);
/** The collection a path parameter names a member of: the path up to it. */
const collectionOf = (path: string, param: string) => path.slice(0, path.indexOf(`/{${param}}`));
const statusOf = (code: ErrorCode) => ERRORS[code][0];
const notFoundCodes = (op: RouteMeta) => op.codes.filter((c) => statusOf(c) === 404);

const ENDPOINTS = "/api/v1/webhooks/endpoints";

/** Path parameters with a fixture of their own; any other is made through its collection. */
const PARAM_FIXTURES = new Set([
  "agency_id",
  "user_id",
  "key_id",
  "listing_number",
  "upload_id",
  "request_id",
  "endpoint_id",
]);

/** A path parameter has a fixture when it is in the table or its collection is a registered route. */
function hasFixture(op: RouteMeta, param: string) {
  if (PARAM_FIXTURES.has(param)) return true;
  const collection = collectionOf(op.path, param);
  return Boolean(find("post", collection) ?? find("get", collection));
}
const unbuildable = (op: RouteMeta) => paramsOf(op.path).filter((p) => !hasFixture(op, p));

/** Every (route, status, code) a check of this file saw, for the coverage check at the end. */
const observed: { route: string; status: number; code?: string }[] = [];

interface Answer {
  status: number;
  json: any;
  text: string;
  headers: Headers;
}
function seen(op: RouteMeta, r: Answer) {
  observed.push({ route: label(op), status: r.status, code: r.json?.error?.code });
  return r;
}

let publicDoc: any;
let internalDoc: any;
const docOf = (op: RouteMeta) => (op.surface === "public" ? publicDoc : internalDoc);
const documented = (op: RouteMeta) => docOf(op).paths[op.path]?.[op.method];
const resolve = (doc: any, s: any) => {
  let out = s;
  while (out?.$ref) out = doc.components.schemas[out.$ref.replace("#/components/schemas/", "")];
  return out;
};

/** The calendar feed every world's agent is connected to, answered by the stub below with an empty calendar. */
const FEED_URL = "https://calendar.contract.example/agent.ics";

// Receivers, storage and calendars are outside this machine: the Worker's outbound calls are answered here.
beforeEach(() => {
  mockFetch((req) =>
    req.url === FEED_URL
      ? new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n", { headers: { "Content-Type": "text/calendar" } })
      : new Response(null, { status: 204 }),
  );
});
afterEach(() => vi.restoreAllMocks());

beforeAll(async () => {
  publicDoc = (await call("/api/v1/openapi.json")).json;
  internalDoc = (await internal("/internal/v1/openapi.json")).json;
  expect(publicDoc?.paths, "public document").toBeTypeOf("object");
  expect(internalDoc?.paths, "internal document").toBeTypeOf("object");
});

/** An agency, its hierarchy, and a platform admin's key for it with every scope and no budget in the way. */
interface World {
  t: Tenant;
  key: string;
  adminKeyId: string;
  params: Map<string, string>;
  /** Whether the agent's calendar is connected yet. */
  calendar: boolean;
}
async function world(): Promise<World> {
  const t = await makeTenant();
  const admin = await makePlatformKey(t.agencyId, { scopes: [...SCOPES] });
  await liftBudgets(admin.keyId);
  return { t, key: admin.key, adminKeyId: admin.keyId, params: new Map(), calendar: false };
}
async function liftBudgets(keyId: string) {
  await db()
    .update(apiKeys)
    .set({ rateLimitOverrides: Object.fromEntries(ENDPOINT_NAMES.map((name) => [name, MAX_BUDGET])) })
    .where(eq(apiKeys.id, keyId));
}

/** Body fields filled from the world by name; `always` ones are sent even when optional. */
const FIELD_FIXTURES: Record<string, { always: boolean; value: (w: World) => string | Promise<string> }> = {
  agency_id: { always: true, value: (w) => w.t.agencyId },
  owner_user_id: { always: true, value: (w) => w.t.owner.id },
  agent_one_id: { always: true, value: (w) => w.t.agent.id },
  agent_two_id: { always: false, value: (w) => w.t.agent.id },
  user_id: { always: true, value: (w) => agentWithCalendar(w) },
  manager_id: { always: true, value: (w) => w.t.teamLead.id },
  minted_by_user_id: { always: true, value: (w) => w.t.owner.id },
  listing_number: { always: false, value: (w) => param(w, "listing_number", "") },
  // Unique across the whole database, so every world gets its own.
  email: { always: true, value: () => `${unique("contract")}@example.test` },
};

/** The agent, its calendar connected on first use, so that its availability can be asked for. */
async function agentWithCalendar(w: World) {
  if (!w.calendar) {
    const r = await internal(`/internal/v1/users/${w.t.agent.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: FEED_URL },
    });
    expect(r.status, r.text).toBe(200);
    w.calendar = true;
  }
  return w.t.agent.id;
}

/** The smallest valid body of a schema: required fields, plus optional ones with an example. */
async function build(w: World, doc: any, raw: any, name = ""): Promise<unknown> {
  const s = resolve(doc, raw);
  if (Object.hasOwn(FIELD_FIXTURES, name)) return FIELD_FIXTURES[name]!.value(w);
  if (s.example !== undefined) return s.example;
  if (s.default !== undefined) return s.default;
  if (s.oneOf ?? s.anyOf) return build(w, doc, (s.oneOf ?? s.anyOf)[0], name);
  if (s.allOf) {
    const parts = await Promise.all(s.allOf.map((p: any) => build(w, doc, p, name)));
    return Object.assign({}, ...parts);
  }
  if (s.enum) return s.enum[0];
  if ("const" in s) return s.const;
  const type = Array.isArray(s.type) ? s.type.find((t: string) => t !== "null") : s.type;
  if (type === "object" || s.properties) {
    const out: Record<string, unknown> = {};
    for (const [field, sub] of Object.entries<any>(s.properties ?? {})) {
      const required = (s.required ?? []).includes(field);
      const fixture = Object.hasOwn(FIELD_FIXTURES, field) ? FIELD_FIXTURES[field] : undefined;
      if (required || (fixture ? fixture.always : resolve(doc, sub).example !== undefined))
        out[field] = await build(w, doc, sub, field);
    }
    return out;
  }
  if (type === "array") {
    const item = await build(w, doc, s.items, name);
    return Array.from({ length: Math.max(1, s.minItems ?? 1) }, () => item);
  }
  if (type === "integer" || type === "number") return s.minimum ?? 1;
  if (type === "boolean") return true;
  if (s.format === "date-time") return new Date(Date.now() + (/end/.test(name) ? 50 : 48) * 3600_000).toISOString();
  if (s.format === "uri") return "https://contract.example.com/";
  if (s.format === "email" || name === "email") return `${unique("contract")}@example.test`;
  return "x".repeat(Math.max(3, s.minLength ?? 0));
}

const requestSchema = (op: RouteMeta) => documented(op)?.requestBody?.content?.["application/json"]?.schema;
async function bodyFor(w: World, op: RouteMeta) {
  if (!op.schemas.json) return undefined;
  const schema = requestSchema(op);
  expect(schema, `${label(op)} documents its JSON body`).toBeDefined();
  return (await build(w, docOf(op), schema)) as Record<string, unknown>;
}

/** Sends `op` as its surface expects: the world's key (or `key`), or the operator token. */
async function send(
  w: World,
  op: RouteMeta,
  path: string,
  opts: { body?: unknown; key?: string | null; idempotencyKey?: string | null; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const method = op.method.toUpperCase();
  const r =
    op.surface === "public"
      ? await call(path, {
          method,
          key: opts.key === undefined ? w.key : opts.key,
          body: opts.body,
          idempotencyKey: opts.idempotencyKey,
          headers: opts.headers,
        })
      : await internal(path, { method, body: opts.body, headers: opts.headers });
  return seen(op, r);
}

/** The value of a path parameter in this world, made on first use. */
async function param(w: World, name: string, prefix: string, template = prefix): Promise<string> {
  const known = w.params.get(name);
  if (known) return known;
  let value: string;
  if (name === "agency_id") value = w.t.agencyId;
  else if (name === "user_id") value = w.t.agent.id;
  else if (name === "key_id") value = w.t.keyId;
  else if (name === "listing_number") value = await activatedListing(w);
  else if (name === "upload_id") value = await listingUpload(w);
  else if (name === "request_id") value = await committedWrite(w);
  // The agency's webhook endpoint, also for the sandbox helpers that act on it.
  else if (name === "endpoint_id") value = await member(w, ENDPOINTS, ENDPOINTS, name);
  else value = await member(w, prefix, template, name);
  w.params.set(name, value);
  return value;
}

/** An activated listing of the agency: created through the public API, activated on the dashboard surface. */
async function activatedListing(w: World) {
  const create = find("post", "/api/v1/listings")!;
  const r = await send(w, create, create.path, { body: await bodyFor(w, create) });
  expect(r.status, r.text).toBe(201);
  const a = await internal(`/internal/v1/agencies/${w.t.agencyId}/listings/${r.json.listing_number}/activate`, {
    method: "POST",
  });
  expect(a.status, a.text).toBe(200);
  // Its agent has a delivery destination, so the listing's media can be delivered.
  const destination = find("put", "/internal/v1/users/{user_id}/delivery-destination");
  if (destination) {
    const path = destination.path.replace("{user_id}", w.t.agent.id);
    const d = await send(w, destination, path, { body: await bodyFor(w, destination) });
    expect(d.status, d.text).toBe(200);
  }
  return r.json.listing_number as string;
}

/** The request id of a write of the agency that committed: a listing created through the public API. */
async function committedWrite(w: World) {
  const create = find("post", "/api/v1/listings")!;
  const r = await send(w, create, create.path, { body: await bodyFor(w, create) });
  expect(r.status, r.text).toBe(201);
  return r.headers.get("X-Request-Id")!;
}

/** An upload announced for the world's listing. */
async function listingUpload(w: World) {
  const announce = find("post", "/api/v1/media/upload")!;
  // A video in parts, so that the routes of a multipart upload have one to act on.
  const body = {
    ...(await bodyFor(w, announce)),
    listing_number: await param(w, "listing_number", ""),
    asset_type: "video",
    content_type: "video/mp4",
    size_bytes: 200 * 1024 * 1024,
  };
  const r = await send(w, announce, announce.path, { body });
  expect(r.status, r.text).toBe(201);
  return r.json.upload_id as string;
}

/** A member of a collection: the one its POST makes, or the first its GET lists. */
async function member(w: World, collection: string, template: string, name: string): Promise<string> {
  const create = find("post", template);
  if (create) {
    const r = await send(w, create, collection, { body: await bodyFor(w, create) });
    expect(r.status, `${name} via POST ${collection}: ${r.text}`).toBeLessThan(300);
    const id = r.json?.[snake(name)] ?? r.json?.id ?? r.json?.key?.id;
    expect(id, `${name} via POST ${collection}: ${r.text}`).toBeTypeOf("string");
    return id;
  }
  await param(w, "listing_number", "");
  const list = await call(collection, { key: w.key });
  expect(list.status, list.text).toBe(200);
  const id = list.json?.data?.[0]?.[snake(name)] ?? list.json?.data?.[0]?.id;
  expect(id, `${name} via GET ${collection}: ${list.text}`).toBeTypeOf("string");
  return id;
}

/** The route's path with every parameter filled from the world; `raw` fills the unbuildable ones. */
async function pathFor(w: World, op: RouteMeta) {
  let path = op.path;
  for (const name of paramsOf(op.path)) {
    const prefix = path.slice(0, path.indexOf(`/{${name}}`));
    const value = hasFixture(op, name) ? await param(w, name, prefix, collectionOf(op.path, name)) : "zz";
    path = path.replace(`{${name}}`, encodeURIComponent(value));
  }
  // A read or removal of a resource that a PUT on the same path sets: set it first.
  const put = find("put", op.path);
  if (put && op.method !== "put") {
    const r = await send(w, put, path, { body: await bodyFor(w, put) });
    expect(r.status, `PUT ${path} before ${label(op)}: ${r.text}`).toBeLessThan(300);
  }
  return path;
}

/** The required query parameters, built like body fields. */
async function queryFor(w: World, op: RouteMeta) {
  const query = new URLSearchParams();
  for (const p of documented(op)?.parameters ?? []) {
    const fixture = Object.hasOwn(FIELD_FIXTURES, p.name) && FIELD_FIXTURES[p.name]!.always;
    if (p.in === "query" && (p.required || fixture))
      query.set(p.name, String(await build(w, docOf(op), p.schema, p.name)));
  }
  return query.size ? `?${query}` : "";
}

/** A valid request to `op` in world `w`. */
async function valid(w: World, op: RouteMeta) {
  return { path: (await pathFor(w, op)) + (await queryFor(w, op)), body: await bodyFor(w, op) };
}

const successStatus = (op: RouteMeta) =>
  Object.keys(documented(op)?.responses ?? {})
    .filter((s) => /^2\d\d$/.test(s))
    .sort()[0];

function expectDocumentedSuccess(op: RouteMeta, r: Answer) {
  const status = successStatus(op);
  expect(status, `${label(op)} documents a success`).toBeDefined();
  expect(String(r.status), `${label(op)}: ${r.text}`).toBe(status);
  const schema = documented(op).responses[status!].content?.["application/json"]?.schema;
  if (!schema) {
    expect(r.text, `${label(op)} documents no body`).toBe("");
    return;
  }
  expect(validate(docOf(op), schema, r.json), `${label(op)}: ${r.text.slice(0, 2000)}`).toEqual([]);
}

/** Operations whose success needs state no fixture builds yet, and what that state is. */
const NO_SUCCESS_FIXTURE = new Map([
  ["POST /internal/v1/agencies/{agency_id}/listings/{listing_number}/media/deliveries", "needs a completed upload"],
  ["POST /api/v1/test_helpers/listings/{listing_number}/uploads/complete", "needs a pending upload"],
  ["POST /api/v1/media/uploads/{upload_id}/complete", "needs every part of the upload stored"],
]);
const successSkip = (op: RouteMeta) =>
  unbuildable(op).length ? `no fixture for ${unbuildable(op).join(", ")}` : NO_SUCCESS_FIXTURE.get(label(op));

/** Why the other-agency check does not apply to a route, if it does not. */
function crossTenantSkip(op: RouteMeta) {
  if (op.anonymous) return "anonymous";
  if (op.scope === "admin") return "platform-wide: the admin scope manages any agency's keys";
  if (paramsOf(op.path).length === 0) return "no resource in the path";
  if (!notFoundCodes(op).length) return "no agency resource in the path";
  if (op.undocumented || unbuildable(op).length) return "never succeeds";
  return undefined;
}

/**
 * A check is generated only for the routes it applies to (no idempotency check on a GET); a route it applies to but
 * the fixtures cannot serve yet is skipped, with the reason in its name.
 */
const only = (applies: boolean) => (applies ? it : ((() => undefined) as unknown as typeof it));

const name = (op: RouteMeta, check: string, skip?: string | false) =>
  `${label(op)}: ${check}${skip ? ` (${skip})` : ""}`;
const RATE_HEADERS = ["x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset"];

describe("public routes, generated from the registry", () => {
  for (const op of PUBLIC) {
    const missingKeyCode = op.session ? "auth_required" : "api_key_missing";

    only(!op.anonymous)(name(op, `no key is 401 ${missingKeyCode}`, op.anonymous && "anonymous"), async () => {
      const w = await world();
      const { path, body } = await valid(w, op);
      expectError(await send(w, op, path, { body, key: null }), 401, missingKeyCode);
    });

    only(Boolean(op.scope))(
      name(op, "a key without its scope is 403 auth.scope_denied", !op.scope && "no scope"),
      async () => {
        const w = await world();
        const { path, body } = await valid(w, op);
        const other = await makePlatformKey(w.t.agencyId, { scopes: SCOPES.filter((s) => s !== op.scope) });
        await liftBudgets(other.keyId);
        expectError(await send(w, op, path, { body, key: other.key }), 403, "auth.scope_denied");
      },
    );

    only(!op.anonymous)(name(op, "a route that takes a key counts against a budget", false), () => {
      expect(op.endpoint, "every authenticated route, read or write, names its budget").toBeDefined();
      expect(ENDPOINT_NAMES).toContain(op.endpoint);
    });

    only(Boolean(op.endpoint))(
      name(op, "over budget is 429 with Retry-After and the rate-limit headers", !op.endpoint && "no budget"),
      async () => {
        const w = await world();
        const limited = await makePlatformKey(w.t.agencyId, { scopes: [...SCOPES] });
        const patch = await internal(`/internal/v1/api-keys/${limited.keyId}`, {
          method: "PATCH",
          body: { rate_limit_overrides: { [op.endpoint!]: 1 } },
        });
        expect(patch.status, patch.text).toBe(200);
        const { path, body } = await valid(w, op);
        await send(w, op, path, { body, key: limited.key });
        const r = await send(w, op, path, { body, key: limited.key });
        expectError(r, 429, "rate_limit_exceeded");
        expect(r.headers.get("retry-after"), r.text).toMatch(/^\d+$/);
        expect(r.headers.get("x-rate-limit-limit")).toBe("1");
        expect(r.headers.get("x-rate-limit-remaining")).toBe("0");
        expect(r.headers.get("x-rate-limit-reset")).toMatch(/^\d+$/);
        // A route left out of the document (it never succeeds) has no 429 or success entry to check.
        if (op.undocumented) return;
        const docHeaders = Object.keys(documented(op)?.responses?.["429"]?.headers ?? {});
        expect(docHeaders, `${label(op)} documents its 429 headers`).toEqual(expect.arrayContaining(RATE_HEADERS));
        const rateNames = docHeaders.filter((h) => /^x-rate-limit-/i.test(h));
        expect(rateNames.filter((h) => h !== h.toLowerCase())).toEqual([]);
        const ok = Object.keys(documented(op).responses[successStatus(op)!].headers ?? {});
        expect(ok, `${label(op)} documents its success headers`).toEqual(expect.arrayContaining(RATE_HEADERS));
      },
    );

    only(MUTATING.has(op.method))(
      name(op, "no X-Idempotency-Key is 400 idempotency.missing", !MUTATING.has(op.method) && "not mutating"),
      async () => {
        const w = await world();
        const { path, body } = await valid(w, op);
        expectError(await send(w, op, path, { body, idempotencyKey: null }), 400, "idempotency.missing");
      },
    );

    const crossSkip = crossTenantSkip(op);
    const crossCheck = crossSkip === "never succeeds" ? it.skip : only(!crossSkip);
    crossCheck(name(op, "another agency's resource is the documented 404", crossSkip), async () => {
      const codes = notFoundCodes(op);
      expect(codes, `${label(op)} documents a 404`).not.toEqual([]);
      const a = await world();
      const { path } = await valid(a, op);
      const b = await world();
      const r = await send(b, op, path, { body: await bodyFor(b, op) });
      expect(r.status, `${label(op)}: ${r.text}`).toBe(404);
      expect(codes, r.text).toContain(r.json?.error?.code);
    });

    only(Boolean(op.schemas.json))(
      name(op, "an unknown body field is 422 validation_unknown_field", !op.schemas.json && "no body"),
      async () => {
        const w = await world();
        const { path, body } = await valid(w, op);
        const r = await send(w, op, path, { body: { ...body, zz_unknown: 1 } });
        expectError(r, 422, "validation_unknown_field");
        expect(r.json.error.details.errors, r.text).toContainEqual(
          expect.objectContaining({ field: "zz_unknown", code: "validation_unknown_field" }),
        );
      },
    );

    if (op.undocumented) {
      it(name(op, "a valid request is answered with one of its own declared errors (undocumented)"), async () => {
        const w = await world();
        const { path, body } = await valid(w, op);
        const r = await send(w, op, path, { body });
        expect(op.errors?.length, label(op)).toBeGreaterThan(0);
        expect(op.errors, r.text).toContain(r.json?.error?.code);
        expectError(r, statusOf(r.json.error.code), r.json.error.code);
      });
    } else {
      it.skipIf(Boolean(successSkip(op)))(
        name(op, "a valid request gets the documented status and schema", successSkip(op)),
        async () => {
          const w = await world();
          const { path, body } = await valid(w, op);
          expectDocumentedSuccess(op, await send(w, op, path, { body }));
        },
      );
    }
  }
});

describe("internal routes, generated from the registry", () => {
  for (const op of INTERNAL) {
    it(name(op, "no operator token is 401 operator_token_invalid"), async () => {
      const w = await world();
      const { path, body } = await valid(w, op);
      const r = seen(op, await call(path, { method: op.method.toUpperCase(), body, idempotencyKey: null }));
      expectError(r, 401, "operator_token_invalid");
    });

    it(name(op, "a wrong operator token is 401 operator_token_invalid"), async () => {
      const w = await world();
      const { path, body } = await valid(w, op);
      const r = seen(
        op,
        await call(path, {
          method: op.method.toUpperCase(),
          body,
          idempotencyKey: null,
          headers: { Authorization: `Bearer ${OPERATOR_TOKEN}x` },
        }),
      );
      expectError(r, 401, "operator_token_invalid");
    });

    only(Boolean(op.schemas.json))(
      name(op, "an unknown body field is 422 validation_unknown_field", !op.schemas.json && "no body"),
      async () => {
        const w = await world();
        const { path, body } = await valid(w, op);
        expectError(await send(w, op, path, { body: { ...body, zz_unknown: 1 } }), 422, "validation_unknown_field");
      },
    );

    it.skipIf(Boolean(successSkip(op)))(
      name(op, "a valid request gets the documented status and schema", successSkip(op)),
      async () => {
        const w = await world();
        const { path, body } = await valid(w, op);
        expectDocumentedSuccess(op, await send(w, op, path, { body }));
      },
    );
  }
});

describe("the generated checks ran", () => {
  it("the schema check refuses what the document does not describe", async () => {
    const w = await world();
    const listing = (await call(`/api/v1/listings/${await param(w, "listing_number", "")}`, { key: w.key })).json;
    const schema = { $ref: "#/components/schemas/Listing" };
    expect(validate(publicDoc, schema, listing)).toEqual([]);
    const { status: _, ...withoutStatus } = listing;
    expect(validate(publicDoc, schema, withoutStatus)).toContain("$.status: required but absent");
    expect(validate(publicDoc, schema, { ...listing, status: "Lost" })).toEqual(['$.status: "Lost" not in enum']);
    expect(validate(publicDoc, schema, { ...listing, address: 7 })).toHaveLength(1);
  });

  it("each route was answered with every code its checks exist for", () => {
    const expected: string[] = [];
    for (const op of PUBLIC) {
      const at = (code: string) => expected.push(`${label(op)} ${code}`);
      if (!op.anonymous) at(op.session ? "auth_required" : "api_key_missing");
      if (op.scope) at("auth.scope_denied");
      if (op.endpoint) at("rate_limit_exceeded");
      if (MUTATING.has(op.method)) at("idempotency.missing");
      if (op.schemas.json) at("validation_unknown_field");
    }
    for (const op of INTERNAL) {
      expected.push(`${label(op)} operator_token_invalid`);
      if (op.schemas.json) expected.push(`${label(op)} validation_unknown_field`);
    }
    for (const op of OPERATIONS) {
      if (!op.undocumented && !successSkip(op)) expected.push(`${label(op)} ${successStatus(op)}`);
      if (op.surface === "public" && !crossTenantSkip(op))
        for (const code of notFoundCodes(op)) expected.push(`${label(op)} 404 ${code}`);
    }
    const got = new Set(observed.flatMap((o) => [`${o.route} ${o.code}`, `${o.route} ${o.status}`]));
    for (const o of observed) if (o.status === 404) got.add(`${o.route} 404 ${o.code}`);
    // A route with several 404 codes needs one of them, the one naming its resource.
    for (const op of PUBLIC) {
      const codes = notFoundCodes(op).map((c) => `${label(op)} 404 ${c}`);
      if (codes.some((c) => got.has(c))) for (const c of codes) got.add(c);
    }
    expect(expected.filter((e) => !got.has(e))).toEqual([]);
    expect(expected.length).toBeGreaterThan(100);
  });
});
