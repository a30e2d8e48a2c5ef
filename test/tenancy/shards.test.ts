import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { database } from "../../src/db/client";
import { agencies, agencyShards, events, listings } from "../../src/db/schema";
import type { ShardName } from "../../src/db/shards";
import { placeAgency } from "../../src/domain/people/placement";
import { call, internal, makeTenant, unique } from "../support/harness";

const control = () => database(env.DB);
const second = () => database(env.SHARD_2);

/** An agency made through the internal API (on an open shard), or placed on `shard` as an operator's move would. */
const createAgency = async (opts: { shard?: ShardName } = {}) => {
  if (opts.shard) {
    const placed = await placeAgency(env, { name: unique("sharded"), kind: "media_agency" }, opts.shard);
    return { id: placed.id, shard: placed.shard as string };
  }
  const r = await internal("/internal/v1/agencies", {
    method: "POST",
    body: { name: unique("sharded"), kind: "media_agency" },
  });
  expect(r.status, r.text).toBe(201);
  return r.json as { id: string; shard: string };
};

describe("agencies on shards", () => {
  it("a new agency goes to an open shard; one placed on another has its rows there alone", async () => {
    const placed = await createAgency({});
    // OPEN_SHARDS leaves only the first shard open to new agencies here.
    expect(placed.shard).toBe("shard-1");
    const moved = await createAgency({ shard: "shard-2" });
    expect(moved.shard).toBe("shard-2");
    expect(await second().select().from(agencies).where(eq(agencies.id, moved.id)).get()).toBeDefined();
    expect(await control().select().from(agencies).where(eq(agencies.id, moved.id)).get()).toBeUndefined();
    const mapped = await control().select().from(agencyShards).where(eq(agencyShards.agencyId, moved.id)).get();
    expect(mapped?.shard).toBe("shard-2");
    for (const a of [placed, moved]) {
      const read = await internal(`/internal/v1/agencies/${a.id}`);
      expect(read.status, read.text).toBe(200);
      expect(read.json).toMatchObject({ id: a.id, shard: a.shard });
    }
  });

  it("the agencies list merges every shard oldest first, each agency once across its pages", async () => {
    const made = [];
    for (let i = 0; i < 6; i++) made.push(await createAgency(i % 2 ? { shard: "shard-2" } : {}));
    const seen: { id: string; shard: string; created_at: string }[] = [];
    let cursor = "";
    for (let pages = 0; pages < 1_000; pages++) {
      const r = await internal(`/internal/v1/agencies?limit=7${cursor ? `&cursor=${cursor}` : ""}`);
      expect(r.status, r.text).toBe(200);
      seen.push(...r.json.data);
      cursor = r.json.next_cursor;
      if (!cursor) break;
    }
    const ids = seen.map((a) => a.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const a of made) expect(seen.find((s) => s.id === a.id)?.shard).toBe(a.shard);
    const order = seen.map((a) => `${a.created_at} ${a.id}`);
    expect(order).toEqual([...order].sort());
  });

  it("lists each shard with its agencies, rows and size; the usage report reads each agency on its shard", async () => {
    const before = await internal("/internal/v1/shards");
    expect(before.status, before.text).toBe(200);
    const t = await makeTenant({ shard: "shard-2" });
    const agency = { id: t.agencyId };
    const after = await internal("/internal/v1/shards");
    const of = (r: typeof after, name: string) => r.json.data.find((s: { name: string }) => s.name === name);
    expect(after.json.data.map((s: { name: string }) => s.name)).toEqual(["shard-1", "shard-2"]);
    expect(of(after, "shard-2").agencies).toBe(of(before, "shard-2").agencies + 1);
    expect(of(after, "shard-2").rows).toBeGreaterThan(of(before, "shard-2").rows);
    expect(of(after, "shard-2").approx_bytes).toBeGreaterThan(0);
    expect(of(after, "shard-1")).toMatchObject({ open: true });
    expect(of(after, "shard-2")).toMatchObject({ open: false });
    const usage = await internal(`/internal/v1/usage?agency_id=${agency.id}`);
    expect(usage.status, usage.text).toBe(200);
    expect(usage.json.data[0].tables.users.rows).toBe(4);
  });

  it("an agency on the second shard works through the public API, its rows there and none on the first", async () => {
    const t = await makeTenant({ shard: "shard-2" });
    const body = { address: "2 Shard Street", owner_user_id: t.owner.id, agent_one_id: t.agent.id };
    const made = await call("/api/v1/listings", { key: t.key, body, idempotencyKey: "sharded-create" });
    expect(made.status, made.text).toBe(201);
    const again = await call("/api/v1/listings", { key: t.key, body, idempotencyKey: "sharded-create" });
    expect(again.json.listing_number).toBe(made.json.listing_number);
    const n = made.json.listing_number;
    const patched = await call(`/api/v1/listings/${n}/sections/matterport`, {
      key: t.key,
      method: "PATCH",
      body: { operation: "set", url: "https://my.matterport.com/show/?m=shard" },
    });
    expect(patched.status, patched.text).toBe(200);
    const read = await call(`/api/v1/listings/${n}`, { key: t.key });
    expect(read.status, read.text).toBe(200);
    expect(read.json.matterport_url ?? read.json.sections?.matterport?.url ?? read.text).toContain("m=shard");
    const feed = await call("/api/v1/events?after_sequence=0", { key: t.key });
    expect(feed.status, feed.text).toBe(200);
    expect(feed.json.data.map((e: { sequence: number }) => e.sequence)).toEqual(
      Array.from({ length: feed.json.last_sequence }, (_, i) => i + 1),
    );
    for (const path of ["/api/v1/users", "/api/v1/limits", "/api/v1/me", "/api/v1/listings"]) {
      const r = await call(path, { key: t.key });
      expect(r.status, `${path}: ${r.text}`).toBe(200);
    }
    const on = async (d: ReturnType<typeof database>) =>
      (await d.select().from(listings).where(eq(listings.agencyId, t.agencyId)).all()).length;
    expect(await on(second())).toBe(1);
    expect(await on(control())).toBe(0);
    expect(await control().select().from(events).where(eq(events.agencyId, t.agencyId)).all()).toEqual([]);
  });
});
