import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env, exports } from "cloudflare:workers";
import { expect, onTestFinished, vi } from "vitest";
import { database } from "../../src/db/client";
import { CONTROL_SHARD, enterSecret, type ShardName, shardDb } from "../../src/db/shards";
import { mintKey } from "../../src/domain/api-keys";
import { hashSecret } from "../../src/domain/keys";
import { createAgency, createUser } from "../../src/domain/people/hierarchy";
import { placeAgency } from "../../src/domain/people/placement";
import { createSession } from "../../src/domain/people/sessions";
import type { Role, Scope } from "../../src/domain/roles";
import worker from "../../src/index";
import { keyringOf } from "../../src/lib/crypto/keyring";
import { randomAlnum } from "../../src/lib/ids";

export const BASE = "https://api.test";
export const OPERATOR_TOKEN = "test-operator-token";
export const db = () => database(env.DB);

let counter = 0;
export const unique = (label = "x") =>
  `${label}-${Date.now().toString(36)}-${(counter++).toString(36)}-${randomAlnum(4)}`;

export interface Tenant {
  agencyId: string;
  owner: { id: string };
  teamLead: { id: string };
  agent: { id: string };
  viewer: { id: string };
  /** A working sandbox key minted by the agency owner. */
  key: string;
  keyId: string;
}

/**
 * A fresh agency with a small hierarchy and a key, unique to the calling test: on the control
 * database (the first shard), or on `shard`, written there as the service's routing would.
 */
export async function makeTenant(
  opts: { role?: "media_agency" | "broker"; scopes?: Scope[]; shard?: ShardName } = {},
): Promise<Tenant & { shard: ShardName }> {
  const shard = opts.shard ?? CONTROL_SHARD;
  const d = shardDb(env, shard);
  const input = { name: unique("agency"), kind: opts.role ?? "media_agency" } as const;
  const agency = shard === CONTROL_SHARD ? await createAgency(d, input) : await placeAgency(env, input, shard);
  const owner = await createUser(d, {
    agencyId: agency.id,
    role: opts.role ?? "media_agency",
    name: "Owner",
    email: `${unique("owner")}@example.test`,
  });
  const teamLead = await createUser(d, {
    managerId: owner.id,
    role: "team_lead",
    name: "Lead",
    email: `${unique("lead")}@example.test`,
  });
  const agent = await createUser(d, {
    managerId: teamLead.id,
    role: "agent",
    name: "Agent",
    email: `${unique("agent")}@example.test`,
  });
  const viewer = await createUser(d, {
    managerId: owner.id,
    role: "viewer",
    name: "Viewer",
    email: `${unique("viewer")}@example.test`,
  });
  const { key, secret } = await mintKey(d, {
    agencyId: agency.id,
    mintedByUserId: owner.id,
    mode: "test",
    scopes: opts.scopes,
    ring: keyringOf(env),
  });
  await enterSecret(env, shard, { hash: await hashSecret(secret), keyId: key.id, agencyId: agency.id });
  return { agencyId: agency.id, owner, teamLead, agent, viewer, key: secret, keyId: key.id, shard };
}

/** A platform admin and a key it minted for `agencyId`, optionally with the admin scope. */
export async function makePlatformKey(
  agencyId: string,
  opts: { role?: Extract<Role, "admin" | "super_admin">; scopes?: Scope[] } = {},
) {
  const d = db();
  const platform = await createAgency(d, { name: unique("platform"), kind: "platform" });
  const admin = await createUser(d, {
    agencyId: platform.id,
    role: opts.role ?? "admin",
    name: "Admin",
    email: `${unique("admin")}@example.test`,
  });
  const { key, secret } = await mintKey(d, {
    agencyId,
    mintedByUserId: admin.id,
    mode: "test",
    scopes: opts.scopes,
    ring: keyringOf(env),
  });
  return { admin, key: secret, keyId: key.id };
}

export async function sessionFor(userId: string) {
  return (await createSession(db(), userId)).token;
}

export interface CallOptions {
  key?: string | null;
  method?: string;
  body?: unknown;
  rawBody?: string;
  headers?: Record<string, string>;
  idempotencyKey?: string | null;
}

/** Calls the Worker the way an integrator would. Mutating calls get a fresh idempotency key unless told otherwise. */
export async function call(path: string, opts: CallOptions = {}) {
  const method = opts.method ?? (opts.body !== undefined || opts.rawBody !== undefined ? "POST" : "GET");
  const headers = new Headers(opts.headers);
  if (opts.key) headers.set("X-API-Key", opts.key);
  if (
    ["POST", "PUT", "PATCH", "DELETE"].includes(method) &&
    opts.idempotencyKey !== null &&
    !headers.has("X-Idempotency-Key")
  ) {
    headers.set("X-Idempotency-Key", opts.idempotencyKey ?? crypto.randomUUID());
  }
  let body: string | undefined = opts.rawBody;
  if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    if (!headers.has("Content-Type")) headers.set("Content-Type", "application/json");
  }
  return answerOf(await exports.default.fetch(new Request(`${BASE}${path}`, { method, headers, body })));
}

/** A response read whole: its status, headers, text and (when it parses) JSON. */
async function answerOf(res: Response) {
  const text = await res.text();
  let json: any;
  try {
    json = text ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { res, status: res.status, headers: res.headers, json, text };
}

/**
 * Hands `req` to the Worker's fetch handler in this isolate with `bindings` laid over the test env
 * (a var changed, a binding replaced by a fake), waits for the work it left to waitUntil, and reads
 * the response whole.
 */
export async function direct(req: Request, bindings: Record<string, unknown> = {}) {
  const ctx = createExecutionContext();
  const res = await worker.fetch(req, { ...env, ...bindings } as Env, ctx);
  await waitOnExecutionContext(ctx);
  return answerOf(res);
}

/** A request to `path` that carries `key` in X-API-Key, for `direct`. */
export function keyed(path: string, key: string, init: RequestInit = {}) {
  const headers = new Headers(init.headers);
  headers.set("X-API-Key", key);
  return new Request(`${BASE}${path}`, { ...init, headers });
}

/** Answers one outbound fetch: the Request the Worker's call describes, and the init it passed (its signal). */
export type Outbound = (req: Request, init?: RequestInit) => Response | Promise<Response>;

/**
 * Answers the Worker's outbound fetches (receivers, storage, calendars) with `handler`; without one,
 * the spy only watches real fetches. Answers the spy, restored when the calling test (or the test
 * whose beforeEach called it) finishes. `pastTheTest` keeps it for the rest of the file instead, for
 * background work that outlives the test; it is then also the way to mock from a module's top level.
 */
export function mockFetch(handler?: Outbound, opts: { pastTheTest?: boolean } = {}) {
  const spy = vi.spyOn(globalThis, "fetch");
  if (handler) spy.mockImplementation(async (input, init) => handler(new Request(input, init), init));
  if (!opts.pastTheTest) onTestFinished(() => spy.mockRestore());
  return spy;
}

export const internal = (path: string, opts: Omit<CallOptions, "key"> = {}) =>
  call(path, {
    ...opts,
    idempotencyKey: null,
    headers: { Authorization: `Bearer ${OPERATOR_TOKEN}`, ...opts.headers },
  });

/** Asserts status and error code, showing the body when it fails. */
export function expectError(
  r: { status: number; json: any; text: string; headers: Headers },
  status: number,
  code: string,
) {
  expect(r.status, r.text).toBe(status);
  expect(r.json?.error?.code, r.text).toBe(code);
  expect(r.json.error.request_id, r.text).toBe(r.headers.get("X-Request-Id"));
  expect(typeof r.json.error.message, r.text).toBe("string");
  expect(r.json.error.details, r.text).toBeTypeOf("object");
}

/** Creates a listing through the public API, optionally activated through the dashboard surface. */
export async function makeListing(t: Tenant, opts: { activate?: boolean; listingNumber?: string } = {}) {
  const r = await call("/api/v1/listings", {
    key: t.key,
    body: {
      address: `${unique("addr")} Harbour Street`,
      owner_user_id: t.owner.id,
      agent_one_id: t.agent.id,
      ...(opts.listingNumber ? { listing_number: opts.listingNumber } : {}),
    },
  });
  expect(r.status, r.text).toBe(201);
  if (opts.activate) {
    const a = await internal(`/internal/v1/agencies/${t.agencyId}/listings/${r.json.listing_number}/activate`, {
      method: "POST",
    });
    expect(a.status, a.text).toBe(200);
  }
  return r.json as { listing_number: string; status: string; [k: string]: unknown };
}

export async function outbox(agencyId: string, type?: string) {
  const { events } = await import("../../src/db/schema");
  const { and, eq } = await import("drizzle-orm");
  return db()
    .select()
    .from(events)
    .where(and(eq(events.agencyId, agencyId), type ? eq(events.eventType, type) : undefined))
    .orderBy(events.createdAt)
    .all();
}

/** One line the Worker logged: its JSON entry, and whether it went to console.error or console.warn. */
export type LogEntry = Record<string, any> & { console: "error" | "warn" };

/**
 * Captures the Worker's error and warning logs until the end of the calling test, for a test that
 * injects a fault: the log is then part of what it asserts, and the run stays quiet.
 */
export function captureErrorLogs(): LogEntry[] {
  const entries: LogEntry[] = [];
  for (const method of ["error", "warn"] as const) {
    const spy = vi.spyOn(console, method).mockImplementation((...args: unknown[]) => {
      const text = args.map(String).join(" ");
      let entry: Record<string, any>;
      try {
        entry = JSON.parse(text);
      } catch {
        entry = { message: text };
      }
      entries.push({ ...entry, console: method });
    });
    onTestFinished(() => spy.mockRestore());
  }
  return entries;
}

/** An error envelope without its `request_id`: a replay's names the replaying request. */
export const withoutRequestId = (json: { error: Record<string, unknown> }) => ({
  ...json,
  error: { ...json.error, request_id: undefined },
});

/**
 * Captures the Worker's info lines (wide events of requests and runs, traced calls of its
 * Durable Objects) until the end of the calling test, each parsed from its JSON.
 */
export function captureInfoLogs(): Record<string, any>[] {
  const entries: Record<string, any>[] = [];
  const spy = vi.spyOn(console, "log").mockImplementation((...args: unknown[]) => {
    try {
      entries.push(JSON.parse(args.map(String).join(" ")));
    } catch {
      entries.push({ message: args.map(String).join(" ") });
    }
  });
  onTestFinished(() => spy.mockRestore());
  return entries;
}

/** An Analytics Engine dataset that keeps what it is given, for `direct` and the consumers. */
export function usageDataset() {
  const points: AnalyticsEngineDataPoint[] = [];
  const dataset: AnalyticsEngineDataset = { writeDataPoint: (point) => void (point && points.push(point)) };
  return { dataset, points };
}
