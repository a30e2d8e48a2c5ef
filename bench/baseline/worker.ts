import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";
import { bucketOf } from "../../src/lib/ids";
import { IDEMPOTENCY_SHARDS } from "../../src/lib/limits";

/** A trivial object: what one Durable Object round trip costs, with no work inside. */
export class Echo extends DurableObject {
  async ping(): Promise<number> {
    return 1;
  }
}

/** Gate-like: one object per key, answering from memory (a count, no storage). */
export class Gate extends DurableObject {
  #admitted = 0;
  async admit(): Promise<{ ok: true; remaining: number }> {
    this.#admitted++;
    return { ok: true, remaining: 100_000 - this.#admitted };
  }
}

/** Ledger-like: one object per agency shard, writing one record per key to its SQLite-backed storage. */
export class Ledger extends DurableObject {
  async record(entry: { key: string; hash: string; at: number }): Promise<boolean> {
    await this.ctx.storage.put(`key:${entry.key}`, entry);
    return true;
  }
}

interface BaselineEnv {
  ECHO: DurableObjectNamespace<Echo>;
  GATE: DurableObjectNamespace<Gate>;
  LEDGER: DurableObjectNamespace<Ledger>;
  DB: D1Database;
}

const SETUP = [
  "CREATE TABLE IF NOT EXISTS floor_users (id TEXT PRIMARY KEY, agency_id TEXT NOT NULL, name TEXT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS floor_listings (id TEXT PRIMARY KEY, agency_id TEXT NOT NULL, address TEXT NOT NULL, " +
    "created_at TEXT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS floor_events (id TEXT PRIMARY KEY, agency_id TEXT NOT NULL, data TEXT NOT NULL)",
  "CREATE TABLE IF NOT EXISTS floor_marks (agency_id TEXT NOT NULL, idem_key TEXT NOT NULL, status INTEGER NOT NULL, " +
    "PRIMARY KEY (agency_id, idem_key))",
  "INSERT OR IGNORE INTO floor_users (id, agency_id, name) VALUES ('usr_floor', 'agy_floor', 'Floor User')",
];

/**
 * A line shaped like the product's wide event (the same fields, typical values), built
 * and written with console.log per request: what the runtime charges for one log line.
 */
function logLine(): void {
  console.log(
    JSON.stringify({
      level: "info",
      message: "request",
      request_id: `req_${crypto.randomUUID().replaceAll("-", "").slice(0, 21)}`,
      trace_id: crypto.randomUUID().replaceAll("-", ""),
      environment: "local",
      route: "getUser",
      method: "GET",
      status: 200,
      error_code: null,
      agency_id: "agy_bench0000000000000",
      key_id: "key_bench0000000000000",
      mode: "test",
      latency_ms: 3,
      gate_ms: 1,
      ledger_ms: 0,
      d1_ms: 1,
      idempotency: null,
      rate_remaining: 998,
      body_bytes: 0,
    }),
  );
}

/** The GET floor's primitives: the gate's RPC, then the D1 read. */
async function floorRead(env: BaselineEnv) {
  await env.GATE.getByName("key_floor").admit();
  return env.DB.prepare("SELECT * FROM floor_users WHERE id = ? AND agency_id = ?")
    .bind("usr_floor", "agy_floor")
    .first();
}

// The baseline: bare Hono routes in the same runtime, no guards. /bare/logged and
// /floor/get/logged add one log line, to a route with no I/O and to the GET floor; /do
// and /d1 price one Durable Object RPC and one D1 read; the floors price each product
// route's primitives with no product code: GET = gate RPC then D1 read; POST = gate RPC,
// ledger RPC with a storage write, then one D1 batch of three inserts.
const app = new Hono<{ Bindings: BaselineEnv }>()
  .get("/bare", (c) => c.json({ ok: true }))
  .get("/bare/logged", (c) => {
    logLine();
    return c.json({ ok: true });
  })
  .get("/do", async (c) => c.json({ ok: await c.env.ECHO.getByName("bench").ping() }))
  .get("/d1", async (c) => c.json({ ok: await c.env.DB.prepare("SELECT 1 AS one").first("one") }))
  .post("/setup", async (c) => {
    await c.env.DB.batch(SETUP.map((s) => c.env.DB.prepare(s)));
    return c.json({ ok: true });
  })
  .get("/floor/get", async (c) => c.json(await floorRead(c.env)))
  .get("/floor/get/logged", async (c) => {
    const user = await floorRead(c.env);
    logLine();
    return c.json(user);
  })
  .post("/floor/post", async (c) => {
    const idemKey = c.req.header("x-idempotency-key") ?? crypto.randomUUID();
    const body = await c.req.text();
    await c.env.GATE.getByName("key_floor").admit();
    // As the product's ledger: one object per (agency, shard), the shard a hash of the key.
    await c.env.LEDGER.getByName(`agy_floor:${bucketOf(idemKey, IDEMPOTENCY_SHARDS)}`).record({
      key: idemKey,
      hash: String(body.length),
      at: Date.now(),
    });
    const id = `lst_${crypto.randomUUID()}`;
    const at = new Date().toISOString();
    await c.env.DB.batch([
      c.env.DB.prepare("INSERT INTO floor_listings (id, agency_id, address, created_at) VALUES (?, ?, ?, ?)").bind(
        id,
        "agy_floor",
        "1 Bench Street",
        at,
      ),
      c.env.DB.prepare("INSERT INTO floor_events (id, agency_id, data) VALUES (?, ?, ?)").bind(
        `evt_${crypto.randomUUID()}`,
        "agy_floor",
        JSON.stringify({ listing_id: id }),
      ),
      c.env.DB.prepare("INSERT INTO floor_marks (agency_id, idem_key, status) VALUES (?, ?, ?)").bind(
        "agy_floor",
        idemKey,
        201,
      ),
    ]);
    return c.json({ id, address: "1 Bench Street", created_at: at }, 201);
  });

export default { fetch: app.fetch };
