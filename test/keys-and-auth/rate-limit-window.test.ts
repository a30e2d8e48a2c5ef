import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { keyGate } from "../../src/accounts/key-changes";
import { KeyGate } from "../../src/durable/key-gate/gate";
import { sha256Hex } from "../../src/lib/ids";
import { SlidingLog } from "../../src/lib/sliding-log";
import { makeTenant } from "../support/harness";

const rows = (state: DurableObjectState) =>
  state.storage.sql
    .exec<{ endpoint: string; n: number }>("SELECT endpoint, sum(n) AS n FROM window_counts GROUP BY endpoint")
    .toArray();

describe("the sliding log", () => {
  it("counts, evicts the oldest first and stays exact across compaction", () => {
    const log = new SlidingLog();
    for (let at = 1; at <= 5_000; at++) log.push(at);
    log.evict(1_000);
    expect(log.size).toBe(4_000);
    expect(log.at(0)).toBe(1_001);
    log.evict(3_000);
    expect(log.size).toBe(2_000);
    expect([log.at(0), log.at(1_999), log.at(2_000), log.newest()]).toEqual([3_001, 5_000, undefined, 5_000]);
    log.evict(5_000);
    expect([log.size, log.newest()]).toEqual([0, undefined]);
  });
});

/** Runs the gate's alarm, which writes its counts, as it would run once WINDOW_FLUSH_MS has passed. */
async function flushWindow(gate: ReturnType<typeof keyGate>) {
  expect(await runDurableObjectAlarm(gate), "the gate set its alarm for the coalesced write").toBe(true);
}

describe("the gate's window", () => {
  it("writes no row per request: admitted requests reach storage as per-second counts, coalesced", async () => {
    const t = await makeTenant();
    const gate = keyGate(env, t.keyId);
    const hash = await sha256Hex(t.key);
    const now = Date.now();
    for (let i = 0; i < 20; i++) {
      const v = await gate.admit(t.keyId, hash, "test", "read_users_list", now + i);
      expect(v.ok && v.rate?.remaining).toBe(299 - i);
    }
    expect(await runInDurableObject(gate, async (_, state) => rows(state))).toEqual([]);
    // Its alarm writes them within five seconds of the first, the most a restart can forget.
    const alarm = await runInDurableObject(gate, async (_, state) => state.storage.getAlarm());
    expect(alarm).not.toBeNull();
    expect(alarm!).toBeLessThanOrEqual(now + 5_000);
    await flushWindow(gate);
    expect(await runInDurableObject(gate, async (_, state) => rows(state))).toEqual([
      { endpoint: "read_users_list", n: 20 },
    ]);
  });

  it("a restarted gate keeps the written counts: the budget is not refilled", async () => {
    const t = await makeTenant();
    const gate = keyGate(env, t.keyId);
    const hash = await sha256Hex(t.key);
    const now = Date.now();
    for (let i = 0; i < 5; i++) await gate.admit(t.keyId, hash, "test", "read_user_single", now);
    await flushWindow(gate);
    const after = await runInDurableObject(gate, async (_, state) => {
      const restarted = new KeyGate(state, env);
      const v = await restarted.admit(t.keyId, hash, "test", "read_user_single", now + 1_000);
      // Restored requests count from the end of their second, never earlier.
      const late = await restarted.admit(t.keyId, hash, "test", "read_user_single", now + 59_999);
      return [v, late];
    });
    expect(after[0]?.ok && after[0].rate?.remaining, JSON.stringify(after)).toBe(594);
    expect(after[1]?.ok && after[1].rate?.remaining, JSON.stringify(after)).toBeLessThanOrEqual(593);
  });
});
