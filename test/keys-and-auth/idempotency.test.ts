import {
  createExecutionContext,
  runDurableObjectAlarm,
  runInDurableObject,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { idempotencyMarks, listings, webhookEndpoints } from "../../src/db/schema";
import { mintKey } from "../../src/domain/api-keys";
import type { LedgerEntry } from "../../src/durable/idempotency-ledger";
import { ledgerName, requestHashOf } from "../../src/http/admission/idempotency-claim";
import worker from "../../src/index";
import {
  BASE,
  call,
  captureErrorLogs,
  db,
  expectError,
  makeListing,
  makeTenant,
  outbox,
  type Tenant,
  withoutRequestId,
} from "../support/harness";

const body = (t: Tenant, extra: Record<string, unknown> = {}) => ({
  address: "7 Replay Road",
  owner_user_id: t.owner.id,
  agent_one_id: t.agent.id,
  ...extra,
});
const create = (t: Tenant, key: string, extra: Record<string, unknown> = {}) =>
  call("/api/v1/listings", { key: t.key, body: body(t, extra), idempotencyKey: key });
const countListings = async (t: Tenant) =>
  (await db().select().from(listings).where(eq(listings.agencyId, t.agencyId)).all()).length;
const ledgerOf = (t: Tenant, key: string) => env.IDEMPOTENCY.getByName(ledgerName(t.agencyId, key));
/** The key's row in its ledger object, if any. */
const entryOf = (t: Tenant, key: string) =>
  runInDurableObject(ledgerOf(t, key), (_, state) =>
    state.storage.sql
      .exec<LedgerEntry>("SELECT * FROM entries WHERE agency_id = ? AND idem_key = ?", t.agencyId, key)
      .toArray()
      .at(0),
  );
/** Rewrites columns of the key's ledger row, as a lost answer, a lapsed lease or the passing of a day would. */
const editEntry = (t: Tenant, key: string, set: Partial<LedgerEntry>) =>
  runInDurableObject(ledgerOf(t, key), (_, state) => {
    const columns = Object.keys(set);
    const updated = state.storage.sql
      .exec(
        `UPDATE entries SET ${columns.map((c) => `${c} = ?`).join(", ")} WHERE agency_id = ? AND idem_key = ? ` +
          "RETURNING idem_key",
        ...Object.values(set),
        t.agencyId,
        key,
      )
      .toArray();
    expect(updated, `no ledger row for ${key}`).toHaveLength(1);
  });
/** The ledger object lost the key's row. */
const dropEntry = (t: Tenant, key: string) =>
  runInDurableObject(ledgerOf(t, key), (_, state) => {
    state.storage.sql.exec("DELETE FROM entries WHERE agency_id = ? AND idem_key = ?", t.agencyId, key);
  });
const hashOf = (payload: string) => requestHashOf("agency", "POST", "/api/v1/listings", payload);

describe("the header", () => {
  it("is required on mutating requests: idempotency.missing", async () => {
    const t = await makeTenant();
    expectError(
      await call("/api/v1/listings", { key: t.key, body: body(t), idempotencyKey: null }),
      400,
      "idempotency.missing",
    );
    expect(await countListings(t)).toBe(0);
  });

  it("longer than 128 characters or not printable ASCII is idempotency_key_invalid", async () => {
    const t = await makeTenant();
    const r = await create(t, "k".repeat(129));
    expectError(r, 400, "idempotency_key_invalid");
    expect(r.json.error.details).toMatchObject({ max_length: 128, received_length: 129 });
    expectError(await create(t, "has space"), 400, "idempotency_key_invalid");
    expect((await create(t, "k".repeat(128))).status).toBe(201);
  });

  it("is never read on GET", async () => {
    const t = await makeTenant();
    expect(
      (await call("/api/v1/listings", { key: t.key, headers: { "X-Idempotency-Key": "x".repeat(500) } })).status,
    ).toBe(200);
  });
});

describe("replay and conflict", () => {
  it("a repeat returns the cached response with X-Idempotent-Replay, executing once", async () => {
    const t = await makeTenant();
    const first = await create(t, "key-1");
    const again = await create(t, "key-1");
    expect(first.status, first.text).toBe(201);
    expect(again.status).toBe(201);
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(first.headers.get("X-Idempotent-Replay")).toBeNull();
    expect(again.json).toEqual(first.json);
    expect(await countListings(t)).toBe(1);
  });

  it("the same key with another body is idempotency_key_conflict", async () => {
    const t = await makeTenant();
    await create(t, "key-2");
    expectError(await create(t, "key-2", { address: "Somewhere else" }), 409, "idempotency_key_conflict");
    expect(await countListings(t)).toBe(1);
  });

  it("errors below 500 are cached too", async () => {
    const t = await makeTenant();
    const first = await create(t, "key-3", { listing_number: "BAD" });
    expectError(first, 422, "validation_string_pattern");
    const again = await create(t, "key-3", { listing_number: "BAD" });
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(again.json.error.code).toBe("validation_string_pattern");
  });

  it("any key of the agency repeating the request gets the cached answer, as the spec keys it", async () => {
    const t = await makeTenant();
    const other = (await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test" })).secret;
    const first = await create(t, "key-4");
    expect(first.status, first.text).toBe(201);
    const again = await call("/api/v1/listings", { key: other, body: body(t), idempotencyKey: "key-4" });
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(again.json).toEqual(first.json);
    expectError(
      await call("/api/v1/listings", { key: other, body: body(t, { address: "Elsewhere" }), idempotencyKey: "key-4" }),
      409,
      "idempotency_key_conflict",
    );
    expect(await countListings(t)).toBe(1);
  });

  it("a replayed error names the replaying request in its envelope and header, and the first in its own", async () => {
    const t = await makeTenant();
    const first = await create(t, "key-5", { listing_number: "BAD" });
    expectError(first, 422, "validation_string_pattern");
    const again = await create(t, "key-5", { listing_number: "BAD" });
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    const id = again.headers.get("X-Request-Id");
    expect(id).toMatch(/^req_/);
    expect(id).not.toBe(first.headers.get("X-Request-Id"));
    expect(again.json.error.request_id, again.text).toBe(id);
    expect(again.headers.get("X-Original-Request-Id")).toBe(first.headers.get("X-Request-Id"));
    expect(again.json.error.code).toBe("validation_string_pattern");
  });

  it("a replayed success keeps its body exactly and names the first request", async () => {
    const t = await makeTenant();
    const first = await create(t, "key-6");
    const again = await create(t, "key-6");
    expect(again.text).toBe(first.text);
    expect(again.headers.get("X-Original-Request-Id")).toBe(first.headers.get("X-Request-Id"));
    expect(again.headers.get("X-Request-Id")).not.toBe(first.headers.get("X-Request-Id"));
  });

  it("keys of one agency never collide with another's", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    expect((await create(a, "shared")).status).toBe(201);
    const other = await create(b, "shared");
    expect(other.status, other.text).toBe(201);
    expect(other.headers.get("X-Idempotent-Replay")).toBeNull();
  });

  it("20 simultaneous identical POSTs cause exactly one listing", async () => {
    const t = await makeTenant();
    const results = await Promise.all(Array.from({ length: 20 }, () => create(t, "burst")));
    expect(await countListings(t)).toBe(1);
    for (const r of results) {
      if (r.status === 409) expectError(r, 409, "idempotency_key_in_progress");
      else expect(r.status, r.text).toBe(201);
    }
    const created = results.filter((r) => r.status === 201);
    expect(new Set(created.map((r) => r.json.listing_number)).size).toBe(1);
    expect(created.filter((r) => r.headers.get("X-Idempotent-Replay") !== "true")).toHaveLength(1);
  });
});

describe("a record belongs to the caller that made the first request", () => {
  // Subscribed to an event these tests never cause, so no delivery leaves for the receiver.
  const register = (key: string, idem: string) =>
    call("/api/v1/webhooks/endpoints", {
      key,
      body: { url: "https://hooks.example.com/alms", event_types: ["listing.cancelled"] },
      idempotencyKey: idem,
    });
  const endpointsOf = async (t: Tenant) =>
    (await db().select().from(webhookEndpoints).where(eq(webhookEndpoints.agencyId, t.agencyId)).all()).length;
  const secondKey = async (t: Tenant) =>
    (await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test" })).secret;

  it("a signing secret is replayed to the key that registered it, and to no other key of the agency", async () => {
    const t = await makeTenant();
    const other = await secondKey(t);
    const first = await register(t.key, "hook-1");
    expect(first.status, first.text).toBe(201);
    const secret: string = first.json.signing_secret;
    expect(secret).toMatch(/^whsec_/);
    const again = await register(t.key, "hook-1");
    expect(again.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(again.json.signing_secret).toBe(secret);
    const stranger = await register(other, "hook-1");
    expectError(stranger, 409, "idempotency_key_conflict");
    expect(stranger.text).not.toContain(secret.slice(6));
    expect(await endpointsOf(t)).toBe(1);
  });

  it("the cached response is stored sealed: the secret is not in the ledger's storage", async () => {
    const t = await makeTenant();
    const first = await register(t.key, "hook-2");
    const secret: string = first.json.signing_secret;
    const stored = JSON.stringify(await entryOf(t, "hook-2"));
    expect(stored).toContain(`"status":201`);
    expect(stored).not.toContain(secret.slice(6));
    expect(stored).not.toContain(first.json.id);
  });

  it("another key never gets the first call's answer, even after the ledger lost its entry", async () => {
    const t = await makeTenant();
    const other = await secondKey(t);
    expect((await register(t.key, "hook-3")).status).toBe(201);
    await dropEntry(t, "hook-3");
    expectError(await register(other, "hook-3"), 409, "idempotency_key_conflict");
    expect(await endpointsOf(t)).toBe(1);
    // The key that made the first call is still answered from its commit.
    const mine = await register(t.key, "hook-3");
    expect(mine.status, mine.text).toBe(201);
    expect(await endpointsOf(t)).toBe(1);
  });
});

describe("in progress, failures and expiry", () => {
  it("while the first call runs: idempotency_key_in_progress with Retry-After: 5", async () => {
    const t = await makeTenant();
    const payload = JSON.stringify(body(t));
    await ledgerOf(t, "busy").begin(t.agencyId, "busy", await hashOf(payload));
    const r = await call("/api/v1/listings", {
      key: t.key,
      rawBody: payload,
      headers: { "Content-Type": "application/json" },
      idempotencyKey: "busy",
    });
    expectError(r, 409, "idempotency_key_in_progress");
    expect(r.headers.get("Retry-After")).toBe("5");
    expect(await countListings(t)).toBe(0);
  });

  it("a 5xx is not cached: the same key may retry", async () => {
    const t = await makeTenant();
    const down = {
      prepare: env.DB.prepare.bind(env.DB),
      batch: () => Promise.reject(new Error("D1 is down")),
      getBookmark: () => null,
    };
    const failing = { ...env, DB: { ...env.DB, ...down, withSession: () => down } };
    const ctx = createExecutionContext();
    const req = new Request(`${BASE}/api/v1/listings`, {
      method: "POST",
      headers: { "X-API-Key": t.key, "Content-Type": "application/json", "X-Idempotency-Key": "retry-me" },
      body: JSON.stringify(body(t)),
    });
    const logs = captureErrorLogs();
    const res = await worker.fetch(req, failing as unknown as Env, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(500);
    expect(logs).toEqual([
      expect.objectContaining({ level: "error", path: "/api/v1/listings", error: "Error: D1 is down" }),
    ]);
    const retry = await create(t, "retry-me");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("X-Idempotent-Replay")).toBeNull();
    expect(await countListings(t)).toBe(1);
  });

  it("a Worker that died after committing is answered from the commit, not run twice", async () => {
    const t = await makeTenant();
    const first = await create(t, "crash-after");
    // The response never reached the cache and the lease ran out.
    await loseAnswer(t, "crash-after");
    const retry = await create(t, "crash-after");
    expect(retry.status, retry.text).toBe(201);
    expect(retry.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(retry.json.listing_number).toBe(first.json.listing_number);
    expect(await countListings(t)).toBe(1);
  });

  it("a ledger that lost its entry still cannot run a committed request twice", async () => {
    const t = await makeTenant();
    const first = await create(t, "lost-state");
    await dropEntry(t, "lost-state");
    const errors = vi.spyOn(console, "error").mockImplementation(() => undefined);
    try {
      const retry = await create(t, "lost-state");
      expect(retry.status, retry.text).toBe(201);
      expect(retry.json.listing_number).toBe(first.json.listing_number);
      // The duplicate was recovered from the commit mark: no failure to report.
      expect(errors.mock.calls.map((args) => String(args[0]))).toEqual([]);
    } finally {
      errors.mockRestore();
    }
    expect(await countListings(t)).toBe(1);
  });

  it("a Worker that died before committing does not lock the key forever", async () => {
    const t = await makeTenant();
    const payload = JSON.stringify(body(t));
    await ledgerOf(t, "crash-before").begin(t.agencyId, "crash-before", await hashOf(payload), Date.now() - 61_000);
    const r = await call("/api/v1/listings", {
      key: t.key,
      rawBody: payload,
      headers: { "Content-Type": "application/json" },
      idempotencyKey: "crash-before",
    });
    expect(r.status, r.text).toBe(201);
    expect(await countListings(t)).toBe(1);
  });

  it("after 24 hours the key is forgotten and the request executes again", async () => {
    const t = await makeTenant();
    await create(t, "day-old");
    const past = new Date(Date.now() - 1000).toISOString();
    await db().update(idempotencyMarks).set({ expiresAt: past }).where(eq(idempotencyMarks.agencyId, t.agencyId));
    await editEntry(t, "day-old", { expires_at: Date.now() - 1000 });
    const again = await create(t, "day-old");
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("X-Idempotent-Replay")).toBeNull();
    expect(await countListings(t)).toBe(2);
  });

  it("the alarm forgets the response and the commit mark", async () => {
    const t = await makeTenant();
    await create(t, "alarmed");
    await editEntry(t, "alarmed", { expires_at: Date.now() - 1 });
    expect(await runDurableObjectAlarm(ledgerOf(t, "alarmed"))).toBe(true);
    expect(await entryOf(t, "alarmed")).toBeUndefined();
    expect(await db().select().from(idempotencyMarks).where(eq(idempotencyMarks.agencyId, t.agencyId)).all()).toEqual(
      [],
    );
  });

  it("an unreachable lock store is idempotency_unavailable and nothing runs", async () => {
    const t = await makeTenant();
    const ctx = createExecutionContext();
    const down = { getByName: () => ({ begin: () => Promise.reject(new Error("reset")) }) };
    const req = new Request(`${BASE}/api/v1/listings`, {
      method: "POST",
      headers: { "X-API-Key": t.key, "Content-Type": "application/json", "X-Idempotency-Key": "k" },
      body: JSON.stringify(body(t)),
    });
    const res = await worker.fetch(req, { ...env, IDEMPOTENCY: down } as unknown as Env, ctx);
    await waitOnExecutionContext(ctx);
    expect(res.status).toBe(503);
    expect(((await res.json()) as any).error.code).toBe("idempotency_unavailable");
    expect(await countListings(t)).toBe(0);
  });
});

/**
 * Holds the D1 batches of two requests (those whose first statement matches `match`)
 * until both have arrived, then runs them one after the other (lowest `rank` first): requests that all read the state
 * before any of them writes, with a known winner. Each request waits on a timer and runs
 * its own batch, since a request may only do I/O (and be woken) in its own context.
 */
async function raced<T>(
  match: RegExp,
  rank: (sql: string) => number,
  run: () => [Promise<T>, Promise<T>],
): Promise<[T, T]> {
  const n = 2;
  const real = env.DB.batch.bind(env.DB);
  const held: { sql: string }[] = [];
  let order: { sql: string }[] | undefined;
  let done = 0;
  // A held batch gives up once the other has had RACE_WAIT_MS to arrive or to run, and fails the race.
  let stuck: Error | undefined;
  const spy = vi.spyOn(env.DB, "batch").mockImplementation(async (stmts: D1PreparedStatement[]) => {
    const sql = (stmts[0] as unknown as { statement: string }).statement;
    if (!match.test(sql) || held.length >= n) return real(stmts);
    const me = { sql };
    held.push(me);
    if (held.length === n) order = [...held].sort((a, b) => rank(a.sql) - rank(b.sql));
    for (let waited = 0; order?.[done] !== me; waited += RACE_POLL_MS) {
      if (waited >= RACE_WAIT_MS) {
        stuck ??= new Error(
          `raced: ${held.length} of ${n} batches matching ${match} arrived and ${done} ran within ${RACE_WAIT_MS} ms; ` +
            `this one (${sql.slice(0, 80)}) was still waiting for its turn`,
        );
        throw stuck;
      }
      await new Promise((r) => setTimeout(r, RACE_POLL_MS));
    }
    try {
      return await real(stmts);
    } finally {
      done++;
    }
  });
  try {
    const settled = await Promise.allSettled(run());
    if (stuck) throw stuck;
    return settled.map((s) => {
      if (s.status === "rejected") throw s.reason;
      return s.value;
    }) as [T, T];
  } finally {
    spy.mockRestore();
  }
}

/** How often a held batch of `raced` looks for its turn, and how long it waits for it at most. */
const RACE_POLL_MS = 5;
const RACE_WAIT_MS = 10_000;

const marksOf = (t: Tenant, key: string) =>
  db()
    .select()
    .from(idempotencyMarks)
    .where(and(eq(idempotencyMarks.agencyId, t.agencyId), eq(idempotencyMarks.idemKey, key)))
    .all();

/** The lock lost its answer and its lease ran out: the next call is decided by the D1 commit mark. */
async function loseAnswer(t: Tenant, key: string) {
  await editEntry(t, key, {
    status: null,
    headers: null,
    body: null,
    lease_token: "dead",
    lease_until: Date.now() - 1,
  });
}

describe("the commit mark tells the truth", () => {
  it("two status changes race: the loser answers 409, commits no mark, and its replay answers that 409", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t, { activate: true });
    const patch = (key: string) =>
      call(`/api/v1/listings/${listing_number}/status`, {
        key: t.key,
        method: "PATCH",
        body: { new_status: "Sold" },
        idempotencyKey: key,
      });
    const [a, b] = await raced(
      /^update "listings"/,
      () => 0,
      () => [patch("race-a"), patch("race-b")],
    );
    expect([a.status, b.status].sort(), `${a.text}\n${b.text}`).toEqual([200, 409]);
    const [loser, loserKey, winnerKey] = a.status === 409 ? [a, "race-a", "race-b"] : [b, "race-b", "race-a"];
    expectError(loser, 409, "no_op_transition");
    expect((await marksOf(t, winnerKey)).map((m) => m.status)).toEqual([200]);
    expect(await marksOf(t, loserKey)).toEqual([]);
    const replayed = await patch(loserKey);
    expect(replayed.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(replayed.status).toBe(409);
    expect(withoutRequestId(replayed.json)).toEqual(withoutRequestId(loser.json));
    // With its cached answer lost, the loser is not answered 200 from a mark: it runs again and is refused again.
    await loseAnswer(t, loserKey);
    expectError(await patch(loserKey), 409, "no_op_transition");
    expect(await outbox(t.agencyId, "listing.status_changed")).toHaveLength(1);
  });

  it("two cancellations race: the loser answers listing_already_cancelled and commits no mark", async () => {
    const t = await makeTenant();
    const { listing_number } = await makeListing(t);
    const cancel = (key: string) =>
      call(`/api/v1/listings/${listing_number}/cancel`, { key: t.key, body: {}, idempotencyKey: key });
    const [a, b] = await raced(
      /^update "listings"/,
      () => 0,
      () => [cancel("cancel-a"), cancel("cancel-b")],
    );
    expect([a.status, b.status].sort(), `${a.text}\n${b.text}`).toEqual([200, 409]);
    const [loser, loserKey] = a.status === 409 ? [a, "cancel-a"] : [b, "cancel-b"];
    expectError(loser, 409, "listing_already_cancelled");
    expect(await marksOf(t, loserKey)).toEqual([]);
    await loseAnswer(t, loserKey);
    expectError(await cancel(loserKey), 409, "listing_already_cancelled");
    expect(await outbox(t.agencyId, "listing.cancelled")).toHaveLength(1);
  });

  it("a tour update that loses to a delete answers tour_not_found and commits no mark", async () => {
    const t = await makeTenant();
    const created = await call("/api/v1/tours", {
      key: t.key,
      body: { address: "1 Race Lane", city: "Springfield", state: "IL", zipcode: "62701" },
    });
    expect(created.status, created.text).toBe(201);
    const path = `/api/v1/tours/${created.json.tour_number}`;
    const [updated, deleted] = await raced(
      /^(update|delete from) "tours"/,
      (sql) => (sql.startsWith("delete") ? 0 : 1),
      () => [
        call(path, { key: t.key, method: "PUT", body: { status: "inactive" }, idempotencyKey: "tour-update" }),
        call(path, { key: t.key, method: "DELETE", idempotencyKey: "tour-delete" }),
      ],
    );
    expect(deleted.status, deleted.text).toBe(204);
    expectError(updated, 404, "tour_not_found");
    expect(await marksOf(t, "tour-update")).toEqual([]);
    expect((await marksOf(t, "tour-delete")).map((m) => m.status)).toEqual([204]);
  });
});
