import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { changeKey, keyGate } from "../../src/accounts/key-changes";
import { database } from "../../src/db/client";
import { agencies, apiKeys } from "../../src/db/schema";
import { OpenWrites, UNREPORTED_WINDOW_MS } from "../../src/durable/key-gate/writes";
import { forgetKeys, handOffBookmark, hashOfKey } from "../../src/http/admission/key-auth";
import worker from "../../src/index";
import { realSession } from "../support/d1-guard";
import { call, db, direct, expectError, keyed, makeTenant } from "../support/harness";

/** Calls the Worker with some bindings replaced, the way `call` does otherwise. */

interface Observed {
  /** The bookmark or constraint each D1 session was opened with. */
  sessions: string[];
  /** Every statement prepared on a session. */
  queries: string[];
}

const TEST_BOOKMARK = /^test-bookmark-/;
let bookmarks = 0;

/**
 * The D1 binding, observed: sessions and their statements are recorded, and a write's
 * session reports a bookmark of its own (local D1 has no replicas to give one).
 */
function observedDb(seen: Observed, opts: { onQuery?: (sql: string) => void } = {}): D1Database {
  const real = env.DB;
  return new Proxy(real, {
    get(target, prop) {
      if (prop !== "withSession") {
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      }
      return (constraint: string) => {
        seen.sessions.push(constraint);
        const session = target.withSession(TEST_BOOKMARK.test(constraint) ? "first-unconstrained" : constraint);
        let wrote = false;
        return {
          prepare(sql: string) {
            seen.queries.push(sql);
            opts.onQuery?.(sql);
            if (/^\s*(insert|update|delete)/i.test(sql)) wrote = true;
            return session.prepare(sql);
          },
          batch: (statements: D1PreparedStatement[]) => session.batch(statements),
          getBookmark: () => (wrote ? `test-bookmark-${String(++bookmarks).padStart(8, "0")}` : session.getBookmark()),
        };
      };
    },
  });
}

const userReads = (seen: Observed) => seen.queries.filter((q) => /from "users"/.test(q)).length;

/**
 * The key gates, answering 200 ms late and noting when they answered in `order`: a read
 * that does not wait for its gate would be noted first.
 */
function slowGates(order: string[]): Env["KEY_GATE"] {
  const gates = {
    getByName(name: string) {
      const stub = env.KEY_GATE.getByName(name);
      return {
        async admit(...args: Parameters<typeof stub.admit>) {
          await new Promise((resolve) => setTimeout(resolve, 200));
          const verdict = await stub.admit(...args);
          order.push("gate answered");
          return verdict;
        },
      };
    },
  };
  return gates as unknown as Env["KEY_GATE"];
}

describe("a read runs on the caller the key's gate confirmed", () => {
  it("the D1 read of a guarded GET begins only once the gate has answered", async () => {
    const t = await makeTenant();
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    const order: string[] = [];
    const seen: Observed = { sessions: [], queries: [] };
    const DB = observedDb(seen, { onQuery: (sql) => /from "users"/.test(sql) && order.push("user read") });
    const r = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key), {
      DB,
      KEY_GATE: slowGates(order),
    });
    expect(r.status, r.text).toBe(200);
    expect(order).toEqual(["gate answered", "user read"]);
    expect(r.headers.get("x-rate-limit-remaining"), r.text).toBe("598");
  });

  it("a GET with outside effects (availability) reads nothing before the gate has answered", async () => {
    const t = await makeTenant({ scopes: ["scheduling:read", "users:read"] });
    const query = "from=2026-12-01T00:00:00Z&to=2026-12-02T00:00:00Z&duration_minutes=60&timezone=UTC";
    const path = `/api/v1/scheduling/availability?${query}`;
    const first = await call(path, { key: t.key });
    expectError(first, 403, "calendar_not_connected");
    const order: string[] = [];
    const seen: Observed = { sessions: [], queries: [] };
    const DB = observedDb(seen, { onQuery: () => order.push("read") });
    const r = await direct(keyed(path, t.key), { DB, KEY_GATE: slowGates(order) });
    expectError(r, 403, "calendar_not_connected");
    expect(order[0], order.join(", ")).toBe("gate answered");
    expect(order.length, order.join(", ")).toBeGreaterThan(1);
  });

  it("a revoked key whose caller this isolate knows gets its refusal and none of the data", async () => {
    const t = await makeTenant();
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    await changeKey(env, t.keyId, { op: "revoke" });
    const r = await call(`/api/v1/users/${t.owner.id}`, { key: t.key });
    expectError(r, 401, "api_key_revoked");
    expect(r.text).not.toContain(t.owner.id);
    expect(r.headers.get("x-rate-limit-limit")).toBeNull();
  });

  it("a disabled key is refused on its next read", async () => {
    const t = await makeTenant();
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    await changeKey(env, t.keyId, { op: "update", patch: { isActive: false } });
    const r = await call(`/api/v1/users/${t.owner.id}`, { key: t.key });
    expectError(r, 401, "api_key_disabled");
    expect(r.text).not.toContain(t.owner.id);
  });

  it("a key over its budget gets 429 and none of the data", async () => {
    const t = await makeTenant();
    await changeKey(env, t.keyId, { op: "update", patch: { rateLimitOverrides: { read_user_single: 2 } } });
    for (const remaining of ["1", "0"]) {
      const r = await call(`/api/v1/users/${t.owner.id}`, { key: t.key });
      expect(r.status, r.text).toBe(200);
      expect(r.headers.get("x-rate-limit-remaining")).toBe(remaining);
    }
    const r = await call(`/api/v1/users/${t.owner.id}`, { key: t.key });
    expectError(r, 429, "rate_limit_exceeded");
    expect(r.text).not.toContain(t.owner.id);
    expect(r.headers.get("x-rate-limit-remaining")).toBe("0");
  });

  it("a scope taken away is honoured on the very next request, and one given back too", async () => {
    const t = await makeTenant();
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    await changeKey(env, t.keyId, { op: "update", patch: { scopes: ["listings:read"] } });
    const denied = await call(`/api/v1/users/${t.owner.id}`, { key: t.key });
    expectError(denied, 403, "auth.scope_denied");
    expect(denied.text).not.toContain(t.owner.id);
    await changeKey(env, t.keyId, { op: "update", patch: { scopes: ["users:read", "listings:read"] } });
    const allowed = await call(`/api/v1/users/${t.owner.id}`, { key: t.key });
    expect(allowed.status, allowed.text).toBe(200);
    expect(allowed.json.id).toBe(t.owner.id);
  });

  it("a role change is honoured on the very next read, which runs once", async () => {
    const t = await makeTenant();
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    const seen: Observed = { sessions: [], queries: [] };
    const same = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key), { DB: observedDb(seen) });
    expect(same.status, same.text).toBe(200);
    expect(userReads(seen), "the caller was confirmed: one read").toBe(1);
    await db().update(apiKeys).set({ role: "viewer" }).where(eq(apiKeys.id, t.keyId));
    await keyGate(env, t.keyId).reload();
    seen.queries.length = 0;
    const changed = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key), { DB: observedDb(seen) });
    expect(changed.status, changed.text).toBe(200);
    expect(userReads(seen), "the read runs once, on the confirmed caller").toBe(1);
    expect(changed.headers.get("x-request-id")).toMatch(/^req_/);
  });

  it("another agency's user is still 404 user_not_found for a known caller", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    expect((await call(`/api/v1/users/${other.owner.id}`, { key: other.key })).status).toBe(200);
    const r = await call(`/api/v1/users/${other.owner.id}`, { key: t.key });
    expectError(r, 404, "user_not_found");
    expect(r.text).not.toContain(other.agencyId);
  });

  it("a HEAD read of a revoked key is refused the same way, with no body", async () => {
    const t = await makeTenant();
    expect((await call(`/api/v1/users/${t.owner.id}`, { key: t.key })).status).toBe(200);
    await changeKey(env, t.keyId, { op: "revoke" });
    const r = await call(`/api/v1/users/${t.owner.id}`, { key: t.key, method: "HEAD" });
    expect(r.status).toBe(401);
    expect(r.text).toBe("");
  });
});

describe("reads run in a D1 session from the key's latest write", () => {
  it("drizzle's D1 driver runs on an actual D1 session: reads, batches, and a write's bookmark", async () => {
    const t = await makeTenant();
    const write = realSession(env.DB, "first-primary");
    expect("exec" in write || "dump" in write, "a session has only prepare and batch").toBe(false);
    const d = database(write as unknown as D1Database);
    const [, renamed] = await d.batch([
      d.update(agencies).set({ name: "Session Agency" }).where(eq(agencies.id, t.agencyId)),
      d.select({ name: agencies.name }).from(agencies).where(eq(agencies.id, t.agencyId)),
    ]);
    expect(renamed).toEqual([{ name: "Session Agency" }]);
    const bookmark = write.getBookmark();
    expect(bookmark).toEqual(expect.any(String));
    const read = database(realSession(env.DB, bookmark!) as unknown as D1Database);
    expect(await read.select({ name: agencies.name }).from(agencies).where(eq(agencies.id, t.agencyId)).get()).toEqual({
      name: "Session Agency",
    });
  });

  it("the read after a key's write starts at that write's bookmark, from any isolate", async () => {
    const t = await makeTenant();
    const seen: Observed = { sessions: [], queries: [] };
    const DB = observedDb(seen);
    const created = await direct(
      keyed("/api/v1/listings", t.key, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        body: JSON.stringify({ address: "1 Bookmark Lane", owner_user_id: t.owner.id, agent_one_id: t.agent.id }),
      }),
      { DB },
    );
    expect(created.status, created.text).toBe(201);
    expect(seen.sessions).toEqual(["first-primary"]);
    const written = `test-bookmark-${String(bookmarks).padStart(8, "0")}`;
    // Another isolate: nothing of the key is known here, only its gate knows the bookmark.
    forgetKeys();
    seen.sessions.length = 0;
    const read = await direct(keyed(`/api/v1/listings/${created.json.listing_number}`, t.key), { DB });
    expect(read.status, read.text).toBe(200);
    expect(seen.sessions).toEqual([written]);
    // This isolate now knows the bookmark; a later write elsewhere moves the gate's.
    await keyGate(env, t.keyId).wrote("test-bookmark-99999999");
    seen.sessions.length = 0;
    const again = await direct(keyed(`/api/v1/listings/${created.json.listing_number}`, t.key), { DB });
    expect(again.status, again.text).toBe(200);
    expect(seen.sessions, "the read starts at the gate's bookmark, not this isolate's").toEqual([
      "test-bookmark-99999999",
    ]);
  });

  it("a key's bookmark never reaches another agency's reads", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const seen: Observed = { sessions: [], queries: [] };
    const DB = observedDb(seen);
    const created = await direct(
      keyed("/api/v1/listings", a.key, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        body: JSON.stringify({ address: "2 Bookmark Lane", owner_user_id: a.owner.id, agent_one_id: a.agent.id }),
      }),
      { DB },
    );
    expect(created.status, created.text).toBe(201);
    seen.sessions.length = 0;
    for (let i = 0; i < 2; i++) {
      const r = await direct(keyed("/api/v1/listings", b.key), { DB });
      expect(r.status, r.text).toBe(200);
    }
    expect(seen.sessions).toEqual(["first-unconstrained", "first-unconstrained"]);
    const own = await direct(keyed("/api/v1/listings", a.key), { DB });
    expect(own.status, own.text).toBe(200);
    expect(seen.sessions.at(-1)).toMatch(TEST_BOOKMARK);
  });
});

/**
 * Key gates whose `wrote` answers only when the test says so, each call noted with its
 * bookmark; `fail` makes the next answer a failure.
 */
function heldGates() {
  const calls: string[] = [];
  const answers: ((ok: boolean) => void)[] = [];
  const gates = {
    getByName: () => ({
      wrote: (bookmark: string) => {
        calls.push(bookmark);
        return new Promise<void>((resolve, reject) =>
          answers.push((ok) => (ok ? resolve() : reject(new Error("gate unreachable")))),
        );
      },
    }),
  } as unknown as Env["KEY_GATE"];
  const answer = async (ok = true) => {
    await vi.waitFor(() => expect(answers.length).toBeGreaterThan(0));
    answers.shift()!(ok);
    await new Promise((r) => setTimeout(r, 0));
  };
  return { calls, gates, answer };
}

/** A key this isolate has seen confirmed, as after any request of it, and its secret's hash. */
async function knownKey() {
  const t = await makeTenant();
  const seen = await direct(keyed(`/api/v1/users/${t.owner.id}`, t.key));
  expect(seen.status, seen.text).toBe(200);
  return { t, hash: await hashOfKey(env, t.key) };
}

describe("a key's bookmark hand-offs from one isolate", () => {
  it("share calls under concurrent writes, each answered once the gate holds its bookmark", async () => {
    const { hash } = await knownKey();
    const { calls, gates, answer } = heldGates();
    const withGates = { ...env, KEY_GATE: gates } as Env;
    const done: string[] = [];
    const handOff = (bookmark: string) => handOffBookmark(withGates, hash, bookmark).then(() => done.push(bookmark));
    const first = handOff("bm-0001");
    const during = ["bm-0002", "bm-0004", "bm-0003"].map(handOff);
    await new Promise((r) => setTimeout(r, 0));
    expect(calls, "one call under way; the writes during it wait").toEqual(["bm-0001"]);
    await answer();
    expect(done).toEqual(["bm-0001"]);
    expect(calls, "one call carries the newest bookmark for all three").toEqual(["bm-0001", "bm-0004"]);
    await answer();
    await Promise.all([first, ...during]);
    expect([...done].sort()).toEqual(["bm-0001", "bm-0002", "bm-0003", "bm-0004"]);
    expect(calls).toHaveLength(2);
    // A bookmark the gate already holds a newer one than needs no call.
    await handOff("bm-0002");
    expect(calls).toHaveLength(2);
  });

  it("end the writes a failed call carried, and a later write makes a call of its own", async () => {
    const warned = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const { hash } = await knownKey();
    const { calls, gates, answer } = heldGates();
    const withGates = { ...env, KEY_GATE: gates } as Env;
    const first = handOffBookmark(withGates, hash, "bm-0001");
    await new Promise((r) => setTimeout(r, 0));
    const later = handOffBookmark(withGates, hash, "bm-0002");
    await answer(false);
    await first;
    expect(warned).toHaveBeenCalledWith(expect.stringContaining("bookmark hand-off failed"));
    // The write after the failed call was not carried by it: its own call follows.
    expect(calls).toEqual(["bm-0001", "bm-0002"]);
    await answer();
    await later;
    expect(calls).toHaveLength(2);
    warned.mockRestore();
  });

  it("keep a call that fails before it sends anything, so the next write makes a call of its own", async () => {
    const warned = vi.spyOn(console, "warn").mockImplementation(() => undefined);
    const { hash } = await knownKey();
    const sent: (string | null)[] = [];
    const gates = {
      getByName: () => ({
        wrote: (bookmark: string | null) => {
          sent.push(bookmark);
          throw new Error("refused before sending");
        },
      }),
    } as unknown as Env["KEY_GATE"];
    const withGates = { ...env, KEY_GATE: gates } as Env;
    await handOffBookmark(withGates, hash, "bm-0001", "ticket-1");
    await handOffBookmark(withGates, hash, "bm-0002", "ticket-2");
    expect(sent, "each write's own call reached the gate").toEqual(["bm-0001", "bm-0002"]);
    expect(warned).toHaveBeenCalledTimes(2);
    warned.mockRestore();
  });
});

/**
 * The key gates with each bookmark hand-off held until `release`: a write's answer that
 * waited for its hand-off would not arrive while one is held.
 */
function heldReports() {
  const held: (() => void)[] = [];
  const gates = {
    getByName(name: string) {
      const stub = env.KEY_GATE.getByName(name);
      return {
        admit: (...args: Parameters<typeof stub.admit>) => stub.admit(...args),
        wrote: async (...args: Parameters<typeof stub.wrote>) => {
          await new Promise<void>((resolve) => held.push(resolve));
          return stub.wrote(...args);
        },
      };
    },
  } as unknown as Env["KEY_GATE"];
  const release = () => {
    for (const resolve of held.splice(0)) resolve();
  };
  return { held, gates, release };
}

const createBody = (t: Awaited<ReturnType<typeof makeTenant>>, address: string) =>
  JSON.stringify({ address, owner_user_id: t.owner.id, agent_one_id: t.agent.id });

describe("a write answers before its bookmark reaches the key's gate", () => {
  it("a read from another isolate, sent right after the write's answer, sees the write", async () => {
    const t = await makeTenant();
    const seen: Observed = { sessions: [], queries: [] };
    const DB = observedDb(seen);
    const reports = heldReports();
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      keyed("/api/v1/listings", t.key, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        body: createBody(t, "1 Unreported Lane"),
      }),
      { ...env, DB, KEY_GATE: reports.gates } as Env,
      ctx,
    );
    const created = (await res.json()) as { listing_number: string };
    expect(res.status).toBe(201);
    await vi.waitFor(() => expect(reports.held, "the hand-off was sent and is still held").toHaveLength(1));
    const written = `test-bookmark-${String(bookmarks).padStart(8, "0")}`;

    // Another isolate, with the real gate: the write is unreported there, so the read goes to the primary.
    forgetKeys();
    seen.sessions.length = 0;
    const read = await direct(keyed(`/api/v1/listings/${created.listing_number}`, t.key), { DB });
    expect(read.status, read.text).toBe(200);
    expect(read.json.address).toBe("1 Unreported Lane");
    expect(seen.sessions, "the read starts where every committed write is").toEqual(["first-primary"]);

    // Once the hand-off arrives, reads start at the write's bookmark again.
    reports.release();
    await waitOnExecutionContext(ctx);
    forgetKeys();
    seen.sessions.length = 0;
    const later = await direct(keyed(`/api/v1/listings/${created.listing_number}`, t.key), { DB });
    expect(later.status, later.text).toBe(200);
    expect(seen.sessions).toEqual([written]);
  });

  it("a refused write reports too: it leaves no read of the key on the primary", async () => {
    const t = await makeTenant();
    const seen: Observed = { sessions: [], queries: [] };
    const DB = observedDb(seen);
    const refused = await direct(
      keyed("/api/v1/listings", t.key, {
        method: "POST",
        headers: { "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        body: JSON.stringify({ address: "" }),
      }),
      { DB },
    );
    expect(refused.status, refused.text).toBe(422);
    forgetKeys();
    seen.sessions.length = 0;
    const read = await direct(keyed("/api/v1/listings", t.key), { DB });
    expect(read.status, read.text).toBe(200);
    expect(seen.sessions).toEqual(["first-unconstrained"]);
  });

  it("a write whose report is lost keeps the key's reads on the primary for the window, then no longer", async () => {
    const t = await makeTenant();
    const gate = keyGate(env, t.keyId);
    const hash = await hashOfKey(env, t.key);
    const mode = env.API_MODE as "test" | "live";
    const now = Date.now();
    const admit = (at: number, writing = false) =>
      gate.admit(t.keyId, hash, mode, null, at, undefined, true, undefined, writing);
    const write = await admit(now, true);
    if (!write.ok) throw new Error("not admitted");
    expect(write.ticket).toEqual(expect.any(String));
    const during = await admit(now + UNREPORTED_WINDOW_MS - 1_000);
    expect(during.ok && during.primary).toBe(true);
    const after = await admit(now + UNREPORTED_WINDOW_MS + 1_000);
    expect(after.ok && after.primary).toBeFalsy();
    // A restarted gate cannot know which writes are open: it keeps reads on the primary until all could have ended.
    const until = await runInDurableObject(gate, (_, state) =>
      state.storage.sql.exec<{ value: string }>("SELECT value FROM gate_meta WHERE name = 'writes_until'").one(),
    );
    expect(Number(until.value)).toBeGreaterThanOrEqual(now + UNREPORTED_WINDOW_MS);
    const restarted = new OpenWrites(Number(until.value), () => undefined);
    expect(restarted.primary(now + UNREPORTED_WINDOW_MS)).toBe(true);
    expect(restarted.primary(Number(until.value))).toBe(false);
  });

  it("a report closes only the writes it carries", async () => {
    const t = await makeTenant();
    const gate = keyGate(env, t.keyId);
    const hash = await hashOfKey(env, t.key);
    const mode = env.API_MODE as "test" | "live";
    const admit = (writing = false) =>
      gate.admit(t.keyId, hash, mode, null, Date.now(), undefined, true, undefined, writing);
    const [one, two] = [await admit(true), await admit(true)];
    if (!one.ok || !two.ok) throw new Error("not admitted");
    await gate.wrote("test-bookmark-a", undefined, [one.ticket!]);
    const between = await admit();
    expect(between.ok && between.primary, "the second write is still unreported").toBe(true);
    await gate.wrote(null, undefined, [two.ticket!]);
    const done = await admit();
    expect(done.ok && done.primary).toBeFalsy();
    expect(done.ok && done.bookmark).toBe("test-bookmark-a");
  });
});
