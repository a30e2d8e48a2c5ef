import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { mintKey } from "../../src/domain/api-keys";
import { call, db, expectError, internal, makePlatformKey, makeTenant, outbox } from "../support/harness";
import { type Signal, signal } from "../support/signal";

const users = (key: string) => call("/api/v1/users", { key });

/**
 * Wraps a D1 binding so that the next read of `api_keys` runs at once but answers only
 * once `release` is raised: a load that began before a change and ends after it.
 */
function slowNextKeyRead(real: D1Database, started: Signal, release: Signal): D1Database {
  let armed = true;
  const pass = (target: object, prop: string | symbol) => {
    const value = Reflect.get(target, prop, target);
    return typeof value === "function" ? value.bind(target) : value;
  };
  const held = (stmt: D1PreparedStatement): D1PreparedStatement =>
    new Proxy(stmt, {
      get(target, prop) {
        if (prop === "bind") return (...args: unknown[]) => held(target.bind(...args));
        if (prop === "all" || prop === "raw" || prop === "first" || prop === "run") {
          return async (...args: unknown[]) => {
            const answer = (target[prop] as (...a: unknown[]) => Promise<unknown>)(...args);
            started.raise();
            const result = await answer;
            await release.wait();
            return result;
          };
        }
        return pass(target, prop);
      },
    });
  return new Proxy(real, {
    get(target, prop) {
      if (prop !== "prepare") return pass(target, prop);
      return (query: string) => {
        const stmt = target.prepare(query);
        if (!armed || !/from "api_keys"/i.test(query)) return stmt;
        armed = false;
        return held(stmt);
      };
    },
  });
}

/** Makes the key's gate load its state slowly once; answers when that load has started. */
async function slowGateLoad(keyId: string) {
  const started = signal("the gate's load started");
  const release = signal("the gate's load released");
  const gate = env.KEY_GATE.getByName(keyId);
  await runInDurableObject(gate, (instance) => {
    const target = instance as unknown as { env: Env };
    target.env = { ...target.env, DB: slowNextKeyRead(target.env.DB, started, release) };
  });
  return { started: started.wait(), release: release.raise };
}

describe("a key follows the user who minted it", () => {
  it("deactivating the minting user refuses the key on the very next request (api_key_disabled)", async () => {
    const t = await makeTenant();
    expect((await users(t.key)).status).toBe(200);
    const r = await internal(`/internal/v1/users/${t.owner.id}/deactivate`, { method: "POST", body: {} });
    expect(r.status, r.text).toBe(200);
    const refused = await users(t.key);
    expectError(refused, 401, "api_key_disabled");
    expect(refused.json.error.details).toEqual({ reason: "minting_user_inactive" });
    expect((await outbox(t.agencyId, "user.deactivated")).map((e) => e.data)).toEqual([
      { user_id: t.owner.id, reason: "deactivated" },
    ]);
  });

  it("suspending the minting user refuses every key it minted, however many (paged past one page)", async () => {
    const t = await makeTenant();
    const keys = [t.key];
    for (let i = 0; i < 54; i++) {
      keys.push((await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test" })).secret);
    }
    // Every gate holds the key's state before the change.
    for (const r of await Promise.all(keys.map(users))) expect(r.status, r.text).toBe(200);
    const r = await internal(`/internal/v1/users/${t.owner.id}/deactivate`, {
      method: "POST",
      body: { reason: "suspended" },
    });
    expect(r.status, r.text).toBe(200);
    for (const refused of await Promise.all(keys.map(users))) expectError(refused, 401, "api_key_disabled");
    expect((await outbox(t.agencyId, "user.deactivated")).map((e) => e.data)).toEqual([
      { user_id: t.owner.id, reason: "suspended" },
    ]);
  });

  it("moving the minting user to another agency refuses the key at once", async () => {
    const from = await makeTenant();
    const to = await makeTenant();
    expect((await users(from.key)).status).toBe(200);
    const moved = await internal(`/internal/v1/users/${from.owner.id}/manager`, {
      method: "PATCH",
      body: { manager_id: to.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    expect(moved.json.agency_id).toBe(to.agencyId);
    const refused = await users(from.key);
    expectError(refused, 401, "api_key_disabled");
    expect(refused.json.error.details).toEqual({ reason: "minting_user_moved" });
    // The other agency's own key is untouched.
    expect((await users(to.key)).status).toBe(200);
  });

  it("a key minted by a platform admin for an agency keeps working; deactivating the admin stops it", async () => {
    const t = await makeTenant();
    const platform = await makePlatformKey(t.agencyId);
    expect((await users(platform.key)).status).toBe(200);
    await internal(`/internal/v1/users/${platform.admin.id}/deactivate`, { method: "POST", body: {} });
    expectError(await users(platform.key), 401, "api_key_disabled");
    expect((await users(t.key)).status).toBe(200);
  });

  it("a move inside the agency changes nothing for the key", async () => {
    const t = await makeTenant();
    expect((await users(t.key)).status).toBe(200);
    const moved = await internal(`/internal/v1/users/${t.agent.id}/manager`, {
      method: "PATCH",
      body: { manager_id: t.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    expect((await users(t.key)).status).toBe(200);
  });
});

describe("a key change is effective on the very next request, even with requests in flight", () => {
  it("revocation: a request whose gate load began before the revoke is refused", async () => {
    const t = await makeTenant();
    const slow = await slowGateLoad(t.keyId);
    const inFlight = users(t.key);
    await slow.started;
    const revoked = await internal(`/internal/v1/api-keys/${t.keyId}/revoke`, { method: "POST" });
    expect(revoked.status, revoked.text).toBe(200);
    slow.release();
    expectError(await inFlight, 401, "api_key_revoked");
    expectError(await users(t.key), 401, "api_key_revoked");
  });

  it("disable and expiry: state loaded before the change never decides", async () => {
    for (const patch of [{ is_active: false }, { expires_at: new Date(Date.now() - 1000).toISOString() }]) {
      const t = await makeTenant();
      const slow = await slowGateLoad(t.keyId);
      const [inFlight, changed] = await Promise.all([
        users(t.key),
        slow.started.then(async () => {
          const r = await internal(`/internal/v1/api-keys/${t.keyId}`, { method: "PATCH", body: patch });
          slow.release();
          return r;
        }),
      ]);
      expect(changed.status, changed.text).toBe(200);
      const code = "is_active" in patch ? "api_key_disabled" : "api_key_expired";
      expectError(inFlight, 401, code);
      expectError(await users(t.key), 401, code);
    }
  });

  it("rotation: a second rotation ends the first secret's grace even for a load already under way", async () => {
    const t = await makeTenant();
    const first = await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" });
    expect(first.status, first.text).toBe(200);
    const slow = await slowGateLoad(t.keyId);
    const inFlight = users(t.key);
    await slow.started;
    const second = await internal(`/internal/v1/api-keys/${t.keyId}/rotate`, { method: "POST" });
    expect(second.status, second.text).toBe(200);
    slow.release();
    expectError(await inFlight, 401, "api_key_invalid");
    expectError(await users(t.key), 401, "api_key_invalid");
    expect((await users(second.json.secret)).status).toBe(200);
  });

  it("user deactivation reaches a gate whose load is under way", async () => {
    const t = await makeTenant();
    const slow = await slowGateLoad(t.keyId);
    const inFlight = users(t.key);
    await slow.started;
    const r = await internal(`/internal/v1/users/${t.owner.id}/deactivate`, { method: "POST", body: {} });
    expect(r.status, r.text).toBe(200);
    slow.release();
    expectError(await inFlight, 401, "api_key_disabled");
    expectError(await users(t.key), 401, "api_key_disabled");
  });
});
