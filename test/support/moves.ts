import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { countRows } from "../../src/db/move-rows";
import { type ShardName, shardD1 } from "../../src/db/shards";
import { call, internal } from "./harness";

/** Starts moving an agency through the internal API; answers the move. */
export async function startMove(agencyId: string, toShard: ShardName) {
  const r = await internal(`/internal/v1/agencies/${agencyId}/move`, { method: "POST", body: { to_shard: toShard } });
  expect(r.status, r.text).toBe(202);
  expect(r.headers.get("Location")).toMatch(new RegExp(`/internal/v1/moves/${r.json.move_id}$`));
  return r.json as { move_id: string; status: string };
}

/** The move as the internal API shows it. */
export async function readMove(moveId: string) {
  const r = await internal(`/internal/v1/moves/${moveId}`);
  expect(r.status, r.text).toBe(200);
  return r.json as { status: string; step: string; error: string | null; counts: Record<string, number> };
}

/** Waits for a move to be done or failed (its object's alarms run it), running `meanwhile` between looks. */
export async function finished(moveId: string, meanwhile: () => Promise<void> = async () => {}) {
  for (let i = 0; i < 600; i++) {
    const move = await readMove(moveId);
    if (move.status === "done" || move.status === "failed") return move;
    await meanwhile();
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`move ${moveId} did not finish`);
}

/** The agency's rows on a shard, by table, leaving out the tables where it has none. */
export async function rowsOn(shard: ShardName, agencyId: string): Promise<Record<string, number>> {
  const counts = await countRows(shardD1(env, shard), agencyId);
  return Object.fromEntries([...counts].filter(([, n]) => n > 0));
}

/**
 * A write that may meet a move's switch: a 503 `agency_moving` is retried with the same
 * idempotency key after its Retry-After, as an integrator would. Answers the final answer and the 503s met.
 */
export async function writeThrough(path: string, opts: { key: string; body?: unknown; method?: string; idem: string }) {
  let refused = 0;
  for (;;) {
    const r = await call(path, { key: opts.key, body: opts.body, method: opts.method, idempotencyKey: opts.idem });
    if (r.status !== 503) return { r, refused };
    expect(r.json.error.code, r.text).toBe("agency_moving");
    expect(r.headers.get("Retry-After")).toBe("1");
    refused++;
    if (refused > 200) throw new Error(`${path} refused ${refused} times`);
    await new Promise((res) => setTimeout(res, 20));
  }
}
