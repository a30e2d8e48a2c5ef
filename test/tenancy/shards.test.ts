import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it, vi } from "vitest";
import { database } from "../../src/db/client";
import { agencies, agencyShards, events, listings, mediaUploads, sessions } from "../../src/db/schema";
import type { ShardName } from "../../src/db/shards";
import { createAgency as createAgencyRow, createUser } from "../../src/domain/people/hierarchy";
import { placeAgency } from "../../src/domain/people/placement";
import worker from "../../src/index";
import { call, internal, makeTenant, unique } from "../support/harness";
import { consume, cron, interceptWebhooks, registerEndpoint, settle, WEBHOOK_QUEUE } from "../support/webhook-harness";

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
    // The tests' OPEN_SHARDS (vitest.config.ts) leaves only the first shard open to new agencies.
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

  it("with both shards open, each new agency goes to the one with fewer agencies", async () => {
    const open = { ...env, OPEN_SHARDS: "shard-1,shard-2" } as unknown as Env;
    const held = async () => {
      const rows = await control().select().from(agencyShards).all();
      return (shard: string) => rows.filter((r) => r.shard === shard).length;
    };
    for (let i = 0; i < 4; i++) {
      const count = await held();
      const emptier = count("shard-2") < count("shard-1") ? "shard-2" : "shard-1";
      const placed = await placeAgency(open, { name: unique("spread"), kind: "media_agency" });
      expect(placed.shard).toBe(emptier);
    }
    // Only the open shards take new agencies, whatever the others hold.
    const closed = { ...env, OPEN_SHARDS: "shard-2" } as unknown as Env;
    expect((await placeAgency(closed, { name: unique("closed"), kind: "media_agency" })).shard).toBe("shard-2");
    // The platform's own staff agency stays on the control database.
    expect((await placeAgency(closed, { name: unique("staff"), kind: "platform" })).shard).toBe("shard-1");
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

  it("the second shard's events are delivered: the sweep takes every shard, each message names its shard", async () => {
    const receivers = interceptWebhooks();
    const t = await makeTenant({ shard: "shard-2" });
    const hook = await registerEndpoint(t, "http://localhost:9999/sharded", ["listing.created"]);
    const body = { address: "3 Shard Street", owner_user_id: t.owner.id, agent_one_id: t.agent.id };
    const made = await call("/api/v1/listings", { key: t.key, body });
    expect(made.status, made.text).toBe(201);
    await settle();
    await cron("* * * * *");
    const mine = receivers.sent.filter((m) => m.shard === "shard-2");
    expect(mine.length).toBeGreaterThan(0);
    await consume(WEBHOOK_QUEUE, mine);
    const got = receivers.received.filter((r) => r.url.endsWith("/sharded")).map((r) => JSON.parse(r.body));
    expect(got.map((e) => e.data.listing_number)).toEqual([made.json.listing_number]);
    const log = await call(`/api/v1/webhooks/endpoints/${hook.id}/deliveries`, { key: t.key });
    expect(log.status, log.text).toBe(200);
    expect(log.json.data.map((d: { status: string }) => d.status)).toEqual(["delivered"]);
    vi.restoreAllMocks();
  });

  it("the operators' routes reach an agency on the second shard by its id, its users', keys' and sessions'", async () => {
    const t = await makeTenant({ shard: "shard-2" });
    const user = await internal("/internal/v1/users", {
      method: "POST",
      body: { manager_id: t.owner.id, role: "agent", name: "Second", email: `${unique("second")}@example.test` },
    });
    expect(user.status, user.text).toBe(201);
    expect((await internal(`/internal/v1/users/${user.json.id}`)).status).toBe(200);
    const listed = await internal(`/internal/v1/users?agency_id=${t.agencyId}&limit=50`);
    expect(listed.json.data.map((u: { id: string }) => u.id)).toContain(user.json.id);
    const minted = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: t.owner.id },
    });
    expect(minted.status, minted.text).toBe(201);
    const me = await call("/api/v1/me", { key: minted.json.secret });
    expect(me.status, me.text).toBe(200);
    expect(me.json.agency.id).toBe(t.agencyId);
    const rotated = await internal(`/internal/v1/api-keys/${minted.json.key.id}/rotate`, { method: "POST" });
    expect(rotated.status, rotated.text).toBe(200);
    expect((await call("/api/v1/me", { key: rotated.json.secret })).status).toBe(200);
    const session = await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.owner.id } });
    expect(session.status, session.text).toBe(201);
    // The media upload route takes the dashboard's session cookie as well as a key.
    const photo = { asset_type: "photo", content_type: "image/jpeg", size_bytes: 1024 };
    const byCookie = await call("/api/v1/media/upload", {
      key: null,
      body: photo,
      headers: { Cookie: `alms_session=${session.json.token}` },
    });
    expect(byCookie.status, byCookie.text).toBe(201);
    const upload = await call(`/api/v1/media/uploads/${byCookie.json.upload_id}`, { key: t.key });
    expect(upload.status, upload.text).toBe(200);
    const quotas = await internal(`/internal/v1/agencies/${t.agencyId}/quotas`, {
      method: "PATCH",
      body: { quotas: { listings: 5 } },
    });
    expect(quotas.status, quotas.text).toBe(200);
    expect((await call("/api/v1/limits", { key: t.key })).json.quotas.listings.limit).toBe(5);
  });

  it("a signed upload URL of the second shard's agency stores its file and completes the upload there", async () => {
    const t = await makeTenant({ shard: "shard-2" });
    const announced = await call("/api/v1/media/upload", {
      key: t.key,
      body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 10 },
    });
    expect(announced.status, announced.text).toBe(201);
    const { url, headers, upload_id } = announced.json;
    const res = await worker.fetch(
      new Request(url, { method: "PUT", headers, body: new Uint8Array(10) }),
      env,
      createExecutionContext(),
    );
    expect(res.status, await res.clone().text()).toBeLessThan(300);
    const upload = await call(`/api/v1/media/uploads/${upload_id}`, { key: t.key });
    expect(upload.json.status).toBe("stored");
    const row = await second().select().from(mediaUploads).where(eq(mediaUploads.id, upload_id)).get();
    expect(row?.status).toBe("completed");
  });

  it("the nightly jobs take every shard: the second shard's expired sessions are purged", async () => {
    const t = await makeTenant({ shard: "shard-2" });
    const expired = {
      tokenHash: `expired-${crypto.randomUUID()}`,
      userId: t.owner.id,
      expiresAt: "2020-01-01T00:00:00.000Z",
    };
    await second().insert(sessions).values(expired);
    await cron("0 3 * * *");
    expect(await second().select().from(sessions).where(eq(sessions.tokenHash, expired.tokenHash)).all()).toEqual([]);
  });

  it("staff mint a key for an agency on the second shard; deactivated on the control database, it stops", async () => {
    const t = await makeTenant({ shard: "shard-2" });
    const platform = await createAgencyRow(control(), { name: unique("staff"), kind: "platform" });
    const admin = await createUser(control(), {
      agencyId: platform.id,
      role: "admin",
      name: "Staff",
      email: `${unique("staff")}@example.test`,
    });
    const staff = { admin };
    const minted = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: staff.admin.id, scopes: ["admin", "users:read"] },
    });
    expect(minted.status, minted.text).toBe(201);
    const me = await call("/api/v1/me", { key: minted.json.secret });
    expect(me.status, me.text).toBe(200);
    expect(me.json.agency.id).toBe(t.agencyId);
    const deactivated = await internal(`/internal/v1/users/${staff.admin.id}/deactivate`, { method: "POST", body: {} });
    expect(deactivated.status, deactivated.text).toBe(200);
    const after = await call("/api/v1/me", { key: minted.json.secret });
    expect(after.status, after.text).toBe(401);
  });
});
