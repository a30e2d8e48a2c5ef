import { DurableObject } from "cloudflare:workers";
import { Hono } from "hono";

/** A trivial object: what one Durable Object round trip costs, with no work inside. */
export class Echo extends DurableObject {
  async ping(): Promise<number> {
    return 1;
  }
}

interface BaselineEnv {
  ECHO: DurableObjectNamespace<Echo>;
  DB: D1Database;
}

// The baseline: bare Hono routes in the same runtime, no guards. /do and /d1 price one
// Durable Object RPC and one D1 read, the two primitives the guarded routes add.
const app = new Hono<{ Bindings: BaselineEnv }>()
  .get("/bare", (c) => c.json({ ok: true }))
  .get("/do", async (c) => c.json({ ok: await c.env.ECHO.getByName("bench").ping() }))
  .get("/d1", async (c) => c.json({ ok: await c.env.DB.prepare("SELECT 1 AS one").first("one") }));

export default { fetch: app.fetch };
