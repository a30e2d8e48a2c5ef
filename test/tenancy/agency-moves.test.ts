import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { MOVED_TABLES, PLATFORM_TABLES } from "../../src/db/moved-tables";
import { call, expectError, internal, makeListing, makeTenant, unique } from "../support/harness";
import { finished, readMove, rowsOn, startMove, writeThrough } from "../support/moves";

/** Every event of the agency's feed, in order. */
async function feed(key: string) {
  const items: { sequence: number; event_id: string }[] = [];
  let cursor = "";
  for (let pages = 0; pages < 100; pages++) {
    const r = await call(`/api/v1/events?after_sequence=0&limit=100${cursor ? `&cursor=${cursor}` : ""}`, { key });
    expect(r.status, r.text).toBe(200);
    items.push(...r.json.data);
    cursor = r.json.next_cursor ? encodeURIComponent(r.json.next_cursor) : "";
    if (!cursor) break;
  }
  return items;
}

const listingBody = (t: { owner: { id: string }; agent: { id: string } }) => ({
  address: `${unique("addr")} Quay Street`,
  owner_user_id: t.owner.id,
  agent_one_id: t.agent.id,
});

describe("moving an agency to another shard", () => {
  it("answers a write that meets the switch 503 agency_moving, stored nowhere, and takes it again after", async () => {
    const t = await makeTenant();
    const before = await rowsOn("shard-1", t.agencyId);
    // The fence a move puts up while it drains its last changes, put up by hand so the write meets it for sure.
    await env.DB.prepare("INSERT INTO agency_departures (agency_id, move_id, state) VALUES (?1, 'mov_fence', 'fenced')")
      .bind(t.agencyId)
      .run();
    const idem = unique("idem");
    const body = listingBody(t);
    try {
      const fenced = await call("/api/v1/listings", { key: t.key, body, idempotencyKey: idem });
      expectError(fenced, 503, "agency_moving");
      expect(Number(fenced.headers.get("Retry-After"))).toBeGreaterThan(0);
      expect(await rowsOn("shard-1", t.agencyId)).toEqual(before);
    } finally {
      await env.DB.prepare("DELETE FROM agency_departures WHERE agency_id = ?1").bind(t.agencyId).run();
    }
    const again = await call("/api/v1/listings", { key: t.key, body, idempotencyKey: idem });
    expect(again.status, again.text).toBe(201);
  });

  it("copies it while it serves: every row, its key, its feed and its replays carry over, nothing stays behind", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 3; i++) await makeListing(t);
    const idem = unique("idem");
    const firstBody = listingBody(t);
    const first = await call("/api/v1/listings", { key: t.key, body: firstBody, idempotencyKey: idem });
    expect(first.status, first.text).toBe(201);
    const before = await rowsOn("shard-1", t.agencyId);

    const move = await startMove(t.agencyId, "shard-2");
    expect(move.status).toBe("copying");
    // Writes and reads go on while it runs: a write meeting the switch is retried with its key.
    let written = 0;
    const done = await finished(move.move_id, async () => {
      const w = await writeThrough("/api/v1/listings", { key: t.key, body: listingBody(t), idem: unique("during") });
      expect(w.r.status, w.r.text).toBe(201);
      written++;
      const read = await call("/api/v1/listings?limit=1", { key: t.key });
      expect(read.status, read.text).toBe(200);
    });
    expect(done, JSON.stringify(done)).toMatchObject({ status: "done", step: "finished", error: null });
    expect(done.counts.rows_copied).toBeGreaterThanOrEqual(Object.values(before).reduce((a, b) => a + b, 0));
    expect(written).toBeGreaterThan(0);

    // Its rows are all on the new shard, none on the old; the map and the agency record agree.
    expect(await rowsOn("shard-1", t.agencyId)).toEqual({});
    const after = await rowsOn("shard-2", t.agencyId);
    expect(after.listings).toBe(4 + written);
    expect(after.users).toBe(before.users);
    expect(after.api_keys).toBe(before.api_keys);
    const agency = await internal(`/internal/v1/agencies/${t.agencyId}`);
    expect(agency.json.shard).toBe("shard-2");

    // The key carries on; the feed is gapless; a retry of a write from before the move replays it.
    const listed = await call("/api/v1/listings?limit=100", { key: t.key });
    expect(listed.json.data).toHaveLength(4 + written);
    const events = await feed(t.key);
    expect(events.map((e) => e.sequence)).toEqual(events.map((_, i) => i + 1));
    const again = await call("/api/v1/listings", { key: t.key, body: firstBody, idempotencyKey: idem });
    expect(again.status, again.text).toBe(201);
    expect(again.json).toEqual(first.json);
    const later = await call("/api/v1/listings", { key: t.key, body: listingBody(t) });
    expect(later.status, later.text).toBe(201);
    expect((await feed(t.key)).at(-1)?.sequence).toBe(events.length + 1);

    // And back again.
    const back = await finished((await startMove(t.agencyId, "shard-1")).move_id);
    expect(back.status, JSON.stringify(back)).toBe("done");
    expect(await rowsOn("shard-2", t.agencyId)).toEqual({});
    expect((await rowsOn("shard-1", t.agencyId)).listings).toBe(5 + written);
    const home = await call("/api/v1/listings", { key: t.key, body: listingBody(t) });
    expect(home.status, home.text).toBe(201);
  });

  it("refuses a move to the shard the agency is on, a second while one runs, and an unknown move or shard", async () => {
    const t = await makeTenant();
    expectError(
      await internal(`/internal/v1/agencies/${t.agencyId}/move`, {
        method: "POST",
        body: { to_shard: "shard-1" },
      }),
      409,
      "agency_move_refused",
    );
    const move = await startMove(t.agencyId, "shard-2");
    const second = await internal(`/internal/v1/agencies/${t.agencyId}/move`, {
      method: "POST",
      body: { to_shard: "shard-2" },
    });
    expectError(second, 409, "agency_move_in_progress");
    expect(second.json.error.details.move_id).toBe(move.move_id);
    expectError(await internal("/internal/v1/moves/mov_unknown"), 404, "move_not_found");
    const bad = await internal(`/internal/v1/agencies/${t.agencyId}/move`, {
      method: "POST",
      body: { to_shard: "shard-9" },
    });
    expect(bad.status, bad.text).toBe(422);
    expect((await finished(move.move_id)).status).toBe("done");
  });

  it("gives up a move whose copy does not match, leaving the agency whole and serving on its old shard", async () => {
    const t = await makeTenant();
    await makeListing(t);
    const before = await rowsOn("shard-1", t.agencyId);
    // A stray row of the agency on the new shard, as a half-finished earlier attempt might leave.
    await env.SHARD_2.batch([
      env.SHARD_2.prepare("INSERT INTO agencies (id, name, kind) VALUES (?1, 'stray', 'media_agency')").bind(
        t.agencyId,
      ),
      env.SHARD_2.prepare(
        "INSERT INTO calendar_discrepancies (id, agency_id, subject_type, subject_id, kind) VALUES (?1, ?2, 'appointment', 'x', 'missing')",
      ).bind(unique("cd"), t.agencyId),
    ]);
    const move = await startMove(t.agencyId, "shard-2");
    const failed = await finished(move.move_id);
    expect(failed.status).toBe("failed");
    expect(failed.error).toMatch(/calendar_discrepancies: 0 on shard-1, 1 on shard-2/);
    expect(await rowsOn("shard-2", t.agencyId)).toEqual({});
    expect(await rowsOn("shard-1", t.agencyId)).toEqual(before);
    expect((await internal(`/internal/v1/agencies/${t.agencyId}`)).json.shard).toBe("shard-1");
    const write = await call("/api/v1/listings", { key: t.key, body: listingBody(t) });
    expect(write.status, write.text).toBe(201);
    expect((await readMove(move.move_id)).step).toBe("finished");
  });
});

describe("queue work sent before a move", () => {
  it("is sent again from the new shard: an upload awaiting its settling gets its job there", async () => {
    const t = await makeTenant();
    const announced = await call("/api/v1/media/upload", {
      key: t.key,
      body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 64 },
    });
    expect(announced.status, announced.text).toBe(201);
    const sent: unknown[] = [];
    const spy = vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body) => {
      sent.push(body);
      return {} as QueueSendResponse;
    });
    try {
      const done = await finished((await startMove(t.agencyId, "shard-2")).move_id);
      expect(done.status).toBe("done");
    } finally {
      spy.mockRestore();
    }
    expect(sent).toContainEqual(
      expect.objectContaining({ kind: "upload.settle", upload_id: announced.json.upload_id, shard: "shard-2" }),
    );
  });
});

describe("the tables a move knows", () => {
  it("are every table of an agency's rows, each journalled and fenced, with every other trigger muted for moves", async () => {
    const { results: tables } = await env.DB.prepare(
      "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '_cf_%' AND name NOT LIKE 'd1_%'",
    ).all<{ name: string }>();
    const known = new Set([...MOVED_TABLES.map((t) => t.name), ...PLATFORM_TABLES]);
    expect(tables.map((t) => t.name).filter((n) => !known.has(n))).toEqual([]);
    const { results: triggers } = await env.DB.prepare(
      "SELECT name, tbl_name AS tableName, sql FROM sqlite_master WHERE type = 'trigger'",
    ).all<{ name: string; tableName: string; sql: string }>();
    for (const t of MOVED_TABLES)
      for (const op of ["insert", "update", "delete"])
        expect(triggers.map((g) => g.name)).toContain(`${t.name}_leaving_${op}`);
    const unmuted = triggers.filter((g) => !g.sql.includes("NOT EXISTS (SELECT 1 FROM move_mute)"));
    expect(unmuted.map((g) => g.name)).toEqual([]);
  });
});

describe("a move set back, as after a restart that lost its last record", () => {
  it("redoes the steps from where its record says and ends with the same rows, none doubled", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 4; i++) await makeListing(t);
    const before = await rowsOn("shard-1", t.agencyId);
    const move = await startMove(t.agencyId, "shard-2");
    // Once some rows are copied, the record goes back to the first page, as if no step after the first had been kept.
    for (let i = 0; i < 500 && (await readMove(move.move_id)).counts.rows_copied === 0; i++)
      await new Promise((r) => setTimeout(r, 5));
    await env.DB.prepare(
      `UPDATE agency_moves SET step = 'copy', cursor = '{"table":0,"at":null}', status = 'copying'
       WHERE id = ?1 AND switched_at IS NULL`,
    )
      .bind(move.move_id)
      .run();
    const done = await finished(move.move_id);
    expect(done.status, JSON.stringify(done)).toBe("done");
    expect(await rowsOn("shard-2", t.agencyId)).toEqual(before);
    expect(await rowsOn("shard-1", t.agencyId)).toEqual({});
    expect((await call("/api/v1/listings?limit=100", { key: t.key })).json.data).toHaveLength(4);
  });
});
