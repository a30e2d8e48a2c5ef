import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { changeKey } from "../../src/accounts/key-changes";
import { listings } from "../../src/db/schema";
import { mintKey } from "../../src/domain/api-keys";
import { DEFAULT_SCOPES } from "../../src/domain/roles";
import type { LedgerEntry } from "../../src/durable/idempotency-ledger";
import { ledgerName } from "../../src/http/admission/idempotency-claim";
import { forgetKeys } from "../../src/http/admission/key-auth";
import { BASE, call, db, direct, expectError, makeTenant, type Tenant, withoutRequestId } from "../support/harness";

const body = (t: Tenant, extra: Record<string, unknown> = {}) => ({
  address: "9 Early Claim Street",
  owner_user_id: t.owner.id,
  agent_one_id: t.agent.id,
  ...extra,
});

/** Creates a listing with the Worker's bindings partly replaced, the way `call` does otherwise. */
async function create(
  t: Tenant,
  idem: string,
  bindings: Partial<Env> = {},
  opts: { key?: string; raw?: string | ReadableStream<Uint8Array> } = {},
) {
  const headers = new Headers({
    "X-API-Key": opts.key ?? t.key,
    "X-Idempotency-Key": idem,
    "Content-Type": "application/json",
  });
  const request = new Request(`${BASE}/api/v1/listings`, {
    method: "POST",
    headers,
    body: opts.raw ?? JSON.stringify(body(t)),
  });
  return direct(request, bindings);
}

/** A body sent in two chunks, the second `ms` later: still being read when the later guards want it. */
function slowBody(text: string, ms: number): ReadableStream<Uint8Array> {
  const bytes = new TextEncoder().encode(text);
  const half = Math.floor(bytes.byteLength / 2);
  return new ReadableStream({
    async start(controller) {
      controller.enqueue(bytes.slice(0, half));
      await new Promise((resolve) => setTimeout(resolve, ms));
      controller.enqueue(bytes.slice(half));
      controller.close();
    },
  });
}

/** The idempotency ledgers, with every call the Worker makes on them logged (and `begin` delayed or failed on demand). */
function ledgers(log: string[], hooks: { begin?: () => Promise<void> } = {}) {
  return {
    getByName(name: string) {
      const stub = env.IDEMPOTENCY.getByName(name);
      return {
        async begin(...args: Parameters<typeof stub.begin>) {
          log.push("begin");
          await hooks.begin?.();
          return stub.begin(...args);
        },
        async complete(...args: Parameters<typeof stub.complete>) {
          log.push("complete");
          return stub.complete(...args);
        },
        async release(...args: Parameters<typeof stub.release>) {
          log.push("release");
          return stub.release(...args);
        },
        async discard(...args: Parameters<typeof stub.discard>) {
          log.push("discard");
          return stub.discard(...args);
        },
      };
    },
  } as unknown as Env["IDEMPOTENCY"];
}

/** The key's row in its ledger object, if any. */
const entryOf = (t: Tenant, key: string) =>
  runInDurableObject(env.IDEMPOTENCY.getByName(ledgerName(t.agencyId, key)), (_, state) =>
    state.storage.sql
      .exec<LedgerEntry>("SELECT * FROM entries WHERE agency_id = ? AND idem_key = ?", t.agencyId, key)
      .toArray()
      .at(0),
  );

const countListings = async (t: Tenant) =>
  (await db().select().from(listings).where(eq(listings.agencyId, t.agencyId)).all()).length;

/** A first request through the key: this isolate now knows its caller as confirmed. */
async function known(t: Tenant) {
  const r = await call(`/api/v1/users/${t.owner.id}`, { key: t.key });
  expect(r.status, r.text).toBe(200);
}

describe("an idempotent write claims its key while the gate decides", () => {
  it("the ledger's begin starts before the key's gate has answered", async () => {
    const t = await makeTenant();
    await known(t);
    const order: string[] = [];
    let claimed!: () => void;
    const begun = new Promise<void>((resolve) => {
      claimed = resolve;
    });
    const gates = {
      getByName(name: string) {
        const stub = env.KEY_GATE.getByName(name);
        return {
          async admit(...args: Parameters<typeof stub.admit>) {
            // Waits for the claim, a second at most: a claim that waits for the gate is late.
            await Promise.race([begun, new Promise((resolve) => setTimeout(resolve, 1_000))]);
            const verdict = await stub.admit(...args);
            order.push("gate answered");
            return verdict;
          },
          wrote: (bookmark: string) => stub.wrote(bookmark),
        };
      },
    };
    const IDEMPOTENCY = ledgers(order, {
      begin: async () => {
        claimed();
      },
    });
    const r = await create(t, "early-1", { KEY_GATE: gates as unknown as Env["KEY_GATE"], IDEMPOTENCY });
    expect(r.status, r.text).toBe(201);
    expect(order).toEqual(["begin", "gate answered", "complete"]);
    expect(await countListings(t)).toBe(1);
  });

  it("a key this isolate has not seen confirmed claims after the gate, once", async () => {
    const t = await makeTenant();
    await known(t);
    forgetKeys();
    const log: string[] = [];
    const r = await create(t, "cold-1", { IDEMPOTENCY: ledgers(log) });
    expect(r.status, r.text).toBe(201);
    expect(log).toEqual(["begin", "complete"]);
  });

  it("a body still arriving when the body limit checks it is read once, by both", async () => {
    const t = await makeTenant();
    await known(t);
    const log: string[] = [];
    const raw = slowBody(JSON.stringify(body(t)), 300);
    const r = await create(t, "slow-1", { IDEMPOTENCY: ledgers(log) }, { raw });
    expect(r.status, r.text).toBe(201);
    expect(log).toEqual(["begin", "complete"]);
    expect(await countListings(t)).toBe(1);
  });

  it("an early claim that fails is left to the guard, which claims again", async () => {
    const t = await makeTenant();
    await known(t);
    const log: string[] = [];
    let begins = 0;
    const IDEMPOTENCY = ledgers(log, {
      begin: async () => {
        if (++begins === 1) throw new Error("ledger unreachable");
      },
    });
    const r = await create(t, "flaky-1", { IDEMPOTENCY });
    expect(r.status, r.text).toBe(201);
    expect(log).toEqual(["begin", "begin", "complete"]);
    const again = await create(t, "flaky-1");
    expect(again.headers.get("X-Idempotent-Replay"), again.text).toBe("true");
  });
});

describe("a refused request leaves no claim behind", () => {
  it("a revoked key gets its refusal; the key's next caller is not kept waiting", async () => {
    const t = await makeTenant();
    await known(t);
    await changeKey(env, t.keyId, { op: "revoke" });
    const log: string[] = [];
    const r = await create(t, "revoked-1", { IDEMPOTENCY: ledgers(log) });
    expectError(r, 401, "api_key_revoked");
    expect((await entryOf(t, "revoked-1"))?.lease_token ?? null, "no lease is left").toBeNull();
    const other = await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test" });
    const retry = await create(t, "revoked-1", {}, { key: other.secret });
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("X-Idempotent-Replay")).toBeNull();
    expect(log, "the claim started early and was undone").toEqual(["begin", "discard"]);
  });

  it("a key over its budget gets 429; its retry once the budget allows is executed", async () => {
    const t = await makeTenant();
    await changeKey(env, t.keyId, { op: "update", patch: { rateLimitOverrides: { create_listing: 1 } } });
    expect((await create(t, "budget-0")).status).toBe(201);
    const log: string[] = [];
    const r = await create(t, "budget-1", { IDEMPOTENCY: ledgers(log) });
    expectError(r, 429, "rate_limit_exceeded");
    expect((await entryOf(t, "budget-1"))?.lease_token ?? null, "no lease is left").toBeNull();
    await changeKey(env, t.keyId, { op: "update", patch: { rateLimitOverrides: { create_listing: 100 } } });
    const retry = await create(t, "budget-1");
    expect(retry.status, retry.text).toBe(201);
    expect(await countListings(t)).toBe(2);
    expect(log, "the claim started early and was undone").toEqual(["begin", "discard"]);
  });

  it("a scope taken away since the caller was confirmed: 403 and no lease", async () => {
    const t = await makeTenant();
    await known(t);
    await changeKey(env, t.keyId, { op: "update", patch: { scopes: ["users:read"] } });
    const log: string[] = [];
    const r = await create(t, "scope-1", { IDEMPOTENCY: ledgers(log) });
    expectError(r, 403, "auth.scope_denied");
    expect((await entryOf(t, "scope-1"))?.lease_token ?? null, "no lease is left").toBeNull();
    await changeKey(env, t.keyId, { op: "update", patch: { scopes: DEFAULT_SCOPES } });
    const retry = await create(t, "scope-1");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("X-Idempotent-Replay")).toBeNull();
    expect(log, "the claim started early and was undone").toEqual(["begin", "discard"]);
  });

  it("a key that never had the scope: 403 on the confirmed caller, and no lease", async () => {
    const t = await makeTenant({ scopes: ["users:read"] });
    await known(t);
    const log: string[] = [];
    const r = await create(t, "scope-2", { IDEMPOTENCY: ledgers(log) });
    expectError(r, 403, "auth.scope_denied");
    expect(await entryOf(t, "scope-2")).toBeUndefined();
    expect(log, "the claim started early and was undone").toEqual(["begin", "discard"]);
  });

  it("a body over the route's limit is 413 and claims nothing", async () => {
    const t = await makeTenant();
    await known(t);
    const log: string[] = [];
    const raw = JSON.stringify(body(t, { description: "x".repeat(70 * 1024) }));
    const r = await create(t, "large-1", { IDEMPOTENCY: ledgers(log) }, { raw });
    expectError(r, 413, "request_body_too_large");
    expect(log).toEqual([]);
    expect(await entryOf(t, "large-1")).toBeUndefined();
  });
});

describe("the guard takes the early claim over", () => {
  it("a replay answers exactly as before, from the one early begin", async () => {
    const t = await makeTenant();
    const first = await create(t, "replay-1");
    expect(first.status, first.text).toBe(201);
    const log: string[] = [];
    const again = await create(t, "replay-1", { IDEMPOTENCY: ledgers(log) });
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(again.headers.get("Location")).toBe(first.headers.get("Location"));
    expect(again.text).toBe(first.text);
    expect(log, "the guard used the early claim instead of a second begin").toEqual(["begin"]);
    expect(await countListings(t)).toBe(1);
  });

  it("another key of the agency repeating the request gets the replay, from its early claim", async () => {
    const t = await makeTenant();
    const first = await create(t, "shared-1");
    expect(first.status, first.text).toBe(201);
    const other = await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test" });
    const warm = await call(`/api/v1/users/${t.owner.id}`, { key: other.secret });
    expect(warm.status, warm.text).toBe(200);
    const again = await create(t, "shared-1", {}, { key: other.secret });
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(again.json.listing_number).toBe(first.json.listing_number);
    expect(await countListings(t)).toBe(1);
  });

  it("a 422 after an early claim is answered and cached, leaving no lease", async () => {
    const t = await makeTenant();
    await known(t);
    const raw = JSON.stringify(body(t, { listing_number: "BAD" }));
    const log: string[] = [];
    const r = await create(t, "invalid-1", { IDEMPOTENCY: ledgers(log) }, { raw });
    expectError(r, 422, "validation_string_pattern");
    expect(log).toEqual(["begin", "complete"]);
    const entry = await entryOf(t, "invalid-1");
    expect(entry?.lease_token ?? null, JSON.stringify(entry)).toBeNull();
    expect(entry?.status).toBe(422);
    const again = await create(t, "invalid-1", {}, { raw });
    expect(again.status, again.text).toBe(422);
    expect(again.headers.get("X-Idempotent-Replay"), again.text).toBe("true");
    expect(withoutRequestId(again.json)).toEqual(withoutRequestId(r.json));
    expect(await countListings(t)).toBe(0);
  });
});
