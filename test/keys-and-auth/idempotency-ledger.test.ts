import { listDurableObjectIds, runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { idempotencyMarks } from "../../src/db/schema";
import type { Begin, LedgerEntry } from "../../src/durable/idempotency-ledger";
import { createLedgerTables } from "../../src/durable/ledger-tables";
import { ledgerName, requestHashOf } from "../../src/http/admission/idempotency-claim";
import { bucketOf, nowIso } from "../../src/lib/ids";
import {
  IDEMPOTENCY_SHARDS,
  IDEMPOTENCY_SWEEP_PAGE,
  IDEMPOTENCY_TTL_MS,
  LEDGER_ANSWER_BYTES,
  LOCK_LEASE_MS,
} from "../../src/lib/limits";
import { call, db, makeTenant, type Tenant } from "../support/harness";

const create = (t: Tenant, key: string) =>
  call("/api/v1/listings", {
    key: t.key,
    body: { address: "9 Ledger Lane", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
    idempotencyKey: key,
  });
const ledgerOf = (agencyId: string, key: string) => env.IDEMPOTENCY.getByName(ledgerName(agencyId, key));
const shardIds = (agencyId: string) =>
  new Set(
    Array.from({ length: IDEMPOTENCY_SHARDS }, (_, s) => env.IDEMPOTENCY.idFromName(`${agencyId}:${s}`).toString()),
  );
const listedIds = async () => new Set((await listDurableObjectIds(env.IDEMPOTENCY)).map((id) => id.toString()));
/** `n` distinct keys that all land in the same ledger object of any agency. */
const keysOfOneShard = (n: number, prefix: string) => {
  const keys: string[] = [];
  for (let i = 0; keys.length < n; i++)
    if (bucketOf(`${prefix}-${i}`, IDEMPOTENCY_SHARDS) === 0) keys.push(`${prefix}-${i}`);
  return keys;
};
const entries = (agencyId: string, key: string) =>
  runInDurableObject(ledgerOf(agencyId, key), (_, state) =>
    state.storage.sql.exec<LedgerEntry>("SELECT * FROM entries ORDER BY idem_key").toArray(),
  );
const alarmOf = (agencyId: string, key: string) =>
  runInDurableObject(ledgerOf(agencyId, key), (_, state) => state.storage.getAlarm());
const marksOf = async (agencyId: string) =>
  (await db().select().from(idempotencyMarks).where(eq(idempotencyMarks.agencyId, agencyId)).all())
    .map((m) => m.idemKey)
    .sort();

describe("one ledger per agency and shard", () => {
  it("many keys of one agency land in at most IDEMPOTENCY_SHARDS objects, each key in its own shard", async () => {
    const t = await makeTenant();
    const before = await listedIds();
    const keys = Array.from({ length: 40 }, (_, i) => `spread-${i}`);
    for (const key of keys) {
      const r = await create(t, key);
      expect(r.status, r.text).toBe(201);
    }
    const created = [...(await listedIds())].filter((id) => !before.has(id));
    const mine = shardIds(t.agencyId);
    expect(created.length).toBeGreaterThan(1);
    expect(created.length).toBeLessThanOrEqual(IDEMPOTENCY_SHARDS);
    expect(created.filter((id) => !mine.has(id))).toEqual([]);
    for (const key of keys) {
      const rows = await entries(t.agencyId, key);
      expect(rows.find((row) => row.idem_key === key)?.status, key).toBe(201);
    }
  });

  it("two agencies never share an object, even for the same keys or agency ids that share a prefix", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    for (const key of ["same-1", "same-2", "same-3"]) {
      expect((await create(a, key)).status).toBe(201);
      expect((await create(b, key)).status).toBe(201);
      expect(ledgerOf(a.agencyId, key).id.equals(ledgerOf(b.agencyId, key).id)).toBe(false);
      for (const t of [a, b]) {
        const agencies = new Set((await entries(t.agencyId, key)).map((row) => row.agency_id));
        expect([...agencies]).toEqual([t.agencyId]);
      }
    }
    const names = (agencyId: string) => new Set(Array.from({ length: 200 }, (_, i) => ledgerName(agencyId, `k${i}`)));
    const short = names("agc_1");
    for (const name of names("agc_1:1")) expect(short.has(name), name).toBe(false);
    for (const id of shardIds(a.agencyId)) expect(shardIds(b.agencyId).has(id)).toBe(false);
  });
});

describe("leases", () => {
  it("a second begin waits while the lease runs; an expired lease lets the retry in, recovering", async () => {
    const t = await makeTenant();
    const hash = await requestHashOf("agency", "POST", "/api/v1/listings", "{}");
    const ledger = ledgerOf(t.agencyId, "leased");
    const now = Date.now();
    const first = (await ledger.begin(t.agencyId, "leased", hash, now)) as Begin;
    expect(first).toMatchObject({ state: "acquired", recovering: false });
    expect(await ledger.begin(t.agencyId, "leased", hash, now + LOCK_LEASE_MS - 1)).toEqual({ state: "in_progress" });
    const other = await requestHashOf("agency", "POST", "/api/v1/listings", '{"a":1}');
    expect(await ledger.begin(t.agencyId, "leased", other, now + 1)).toEqual({ state: "conflict" });
    const retry = (await ledger.begin(t.agencyId, "leased", hash, now + LOCK_LEASE_MS + 1)) as Begin;
    expect(retry).toMatchObject({ state: "acquired", recovering: true });
    // The lapsed lease's holder can no longer complete; the retry can.
    if (first.state !== "acquired" || retry.state !== "acquired") throw new Error("not acquired");
    const response = { status: 201, headers: [["content-type", "application/json"]] as [string, string][], body: "x" };
    expect(
      await ledger.complete({ agencyId: t.agencyId, idempotencyKey: "leased", token: first.token }, response),
    ).toBe(false);
    expect(
      await ledger.complete({ agencyId: t.agencyId, idempotencyKey: "leased", token: retry.token }, response),
    ).toBe(true);
    expect(await ledger.begin(t.agencyId, "leased", hash)).toEqual({ state: "replay", response });
  });

  it("an entry found expired on begin is absent, and its commit mark is forgotten", async () => {
    const t = await makeTenant();
    expect((await create(t, "stale")).status).toBe(201);
    expect(await marksOf(t.agencyId)).toEqual(["stale"]);
    const hash = await requestHashOf("agency", "POST", "/api/v1/listings", "{}");
    const later = Date.now() + IDEMPOTENCY_TTL_MS + 1;
    const begin = await ledgerOf(t.agencyId, "stale").begin(t.agencyId, "stale", hash, later);
    expect(begin).toMatchObject({ state: "acquired", recovering: false });
    expect(await marksOf(t.agencyId)).toEqual([]);
  });
});

describe("the expiry alarm", () => {
  it("forgets expired entries and their commit marks, keeps the rest, and re-arms for the next expiry", async () => {
    const t = await makeTenant();
    const [old1, old2, fresh] = keysOfOneShard(3, "alarm");
    for (const key of [old1!, old2!, fresh!]) expect((await create(t, key)).status).toBe(201);
    const ledger = ledgerOf(t.agencyId, fresh!);
    const freshExpiry = await runInDurableObject(ledger, (_, state) => {
      state.storage.sql.exec(
        "UPDATE entries SET expires_at = ? WHERE agency_id = ? AND idem_key IN (?, ?)",
        Date.now() - 1,
        t.agencyId,
        old1!,
        old2!,
      );
      return state.storage.sql
        .exec<{ expires_at: number }>("SELECT expires_at FROM entries WHERE idem_key = ?", fresh!)
        .one().expires_at;
    });
    expect(await runDurableObjectAlarm(ledger)).toBe(true);
    expect((await entries(t.agencyId, fresh!)).map((row) => row.idem_key)).toEqual([fresh]);
    expect(await marksOf(t.agencyId)).toEqual([fresh]);
    expect(await alarmOf(t.agencyId, fresh!)).toBe(freshExpiry);
    // The forgotten key runs afresh.
    const again = await create(t, old1!);
    expect(again.status, again.text).toBe(201);
    expect(again.headers.get("X-Idempotent-Replay")).toBeNull();
  });

  it("sweeps a backlog larger than one page over several runs, marks included", async () => {
    const t = await makeTenant();
    const total = IDEMPOTENCY_SWEEP_PAGE + 30;
    const keys = keysOfOneShard(total, "backlog");
    const expired = Date.now() - 1000;
    const marks: (typeof idempotencyMarks.$inferInsert)[] = keys.map((key) => ({
      agencyId: t.agencyId,
      idemKey: key,
      requestHash: "h",
      status: 201,
      resourceType: null,
      resourceId: null,
      expiresAt: nowIso(expired),
      createdAt: nowIso(expired - IDEMPOTENCY_TTL_MS),
    }));
    const d = db();
    const inserts = [];
    for (let i = 0; i < marks.length; i += 10) inserts.push(d.insert(idempotencyMarks).values(marks.slice(i, i + 10)));
    const [first, ...rest] = inserts;
    await d.batch([first!, ...rest]);
    const ledger = ledgerOf(t.agencyId, keys[0]!);
    await runInDurableObject(ledger, async (_, state) => {
      for (const key of keys) {
        state.storage.sql.exec(
          "INSERT INTO entries (agency_id, idem_key, request_hash, expires_at, status, headers, body) " +
            "VALUES (?, ?, 'h', ?, 201, '[]', 'sealed')",
          t.agencyId,
          key,
          expired,
        );
      }
      await state.storage.setAlarm(Date.now());
    });

    expect(await runDurableObjectAlarm(ledger)).toBe(true);
    expect(await entries(t.agencyId, keys[0]!)).toHaveLength(30);
    expect(await marksOf(t.agencyId)).toHaveLength(30);
    // More remain expired: the alarm is due again at once.
    expect(await alarmOf(t.agencyId, keys[0]!)).toBeLessThanOrEqual(Date.now());

    expect(await runDurableObjectAlarm(ledger)).toBe(true);
    expect(await entries(t.agencyId, keys[0]!)).toEqual([]);
    expect(await marksOf(t.agencyId)).toEqual([]);
    expect(await alarmOf(t.agencyId, keys[0]!)).toBeNull();
  });

  it("forgets the marks of its own agency only", async () => {
    const a = await makeTenant();
    const b = await makeTenant();
    const [key] = keysOfOneShard(1, "own");
    for (const t of [a, b]) expect((await create(t, key!)).status).toBe(201);
    await runInDurableObject(ledgerOf(a.agencyId, key!), async (_, state) => {
      state.storage.sql.exec("UPDATE entries SET expires_at = ?", Date.now() - 1);
    });
    expect(await runDurableObjectAlarm(ledgerOf(a.agencyId, key!))).toBe(true);
    expect(await marksOf(a.agencyId)).toEqual([]);
    expect(await marksOf(b.agencyId)).toEqual([key]);
    const kept = await db()
      .select()
      .from(idempotencyMarks)
      .where(and(eq(idempotencyMarks.agencyId, b.agencyId), eq(idempotencyMarks.idemKey, key!)))
      .get();
    expect(kept?.status).toBe(201);
  });
});

describe("the bytes of answers a ledger keeps", () => {
  const answerBytes = (agencyId: string, key: string) =>
    runInDurableObject(ledgerOf(agencyId, key), (_, state) => ({
      counted: state.storage.sql.exec<{ used: number }>("SELECT used FROM answer_bytes").one().used,
      actual: state.storage.sql
        .exec<{ n: number }>(
          "SELECT coalesce(sum(length(CAST(headers AS BLOB)) + length(CAST(body AS BLOB))), 0) AS n FROM entries",
        )
        .one().n,
    }));

  it("survive the object starting again: its tables are made once, the count kept", async () => {
    const t = await makeTenant();
    const [key] = keysOfOneShard(1, `restart-${crypto.randomUUID()}`);
    expect((await create(t, key!)).status).toBe(201);
    const before = await answerBytes(t.agencyId, key!);
    await runInDurableObject(ledgerOf(t.agencyId, key!), (_, state) => createLedgerTables(state.storage.sql));
    expect(await answerBytes(t.agencyId, key!)).toEqual(before);
  });

  it("are counted exactly as answers are kept and forgotten", async () => {
    const t = await makeTenant();
    const [a, b] = keysOfOneShard(2, `bytes-${crypto.randomUUID()}`);
    expect((await create(t, a!)).status).toBe(201);
    const one = await answerBytes(t.agencyId, a!);
    expect(one.counted).toBeGreaterThan(500);
    expect(one.counted).toBe(one.actual);
    expect((await create(t, b!)).status).toBe(201);
    const two = await answerBytes(t.agencyId, a!);
    expect(two.counted).toBe(two.actual);
    await runInDurableObject(ledgerOf(t.agencyId, a!), (_, state) => {
      state.storage.sql.exec("UPDATE entries SET expires_at = 0 WHERE idem_key = ?", a!);
    });
    await runDurableObjectAlarm(ledgerOf(t.agencyId, a!));
    const after = await answerBytes(t.agencyId, a!);
    expect(after.counted).toBe(after.actual);
    expect(after.counted).toBe(two.counted - one.counted);
  });

  it("at its bound, a full object takes no new key (409); its replays and the agency's other objects go on", async () => {
    const t = await makeTenant();
    const [kept, fresh] = keysOfOneShard(2, `full-${crypto.randomUUID()}`);
    const first = await create(t, kept!);
    expect(first.status).toBe(201);
    await runInDurableObject(ledgerOf(t.agencyId, kept!), (_, state) => {
      state.storage.sql.exec("UPDATE answer_bytes SET used = used + ?", LEDGER_ANSWER_BYTES);
    });
    const refused = await create(t, fresh!);
    expect(refused.status, refused.text).toBe(409);
    expect(refused.json.error.code).toBe("agency_quota_exceeded");
    expect(refused.json.error.details).toMatchObject({
      resource: "idempotency_answer_bytes",
      limit: LEDGER_ANSWER_BYTES,
    });
    expect((await entries(t.agencyId, fresh!)).map((e) => e.idem_key)).not.toContain(fresh);
    const replay = await create(t, kept!);
    expect(replay.status).toBe(201);
    expect(replay.json.listing_number).toBe(first.json.listing_number);
    let other = "";
    for (let i = 0; !other; i++) if (bucketOf(`other-${i}`, IDEMPOTENCY_SHARDS) !== 0) other = `other-${i}`;
    expect((await create(t, `${other}`)).status).toBe(201);
  });
});
