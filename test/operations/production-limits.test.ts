import { env } from "cloudflare:workers";
import { eq, getTableColumns } from "drizzle-orm";
import type { SQLiteTable } from "drizzle-orm/sqlite-core";
import { describe, expect, it } from "vitest";
import { events, users, webhookDeliveries, webhookDeliveryAttempts, webhookEndpoints } from "../../src/db/schema";
import { newId } from "../../src/lib/ids";
import { asInvocation, breaches, D1_LIMITS } from "../support/d1-guard";
import { call, db, expectError, internal, makeTenant, unique } from "../support/harness";

/** Runs `fn`, which must breach a D1 limit; answers the breach and clears it. */
async function breachOf(fn: () => Promise<unknown>): Promise<string> {
  await expect(fn()).rejects.toThrow(/D1 production limit breached/);
  const seen = breaches.splice(0);
  expect(seen).toHaveLength(1);
  return seen[0]!;
}

/** Inserts many rows in statements that each stay inside the bound-parameter limit. */
async function insertMany<T extends SQLiteTable>(table: T, rows: T["$inferInsert"][]) {
  const columns = Object.keys(getTableColumns(table)).length;
  const perStatement = Math.floor(D1_LIMITS.boundParameters / columns);
  const d = db();
  for (let i = 0; i < rows.length; i += perStatement * 20) {
    const statements = [];
    for (let j = i; j < Math.min(rows.length, i + perStatement * 20); j += perStatement) {
      statements.push(d.insert(table).values(rows.slice(j, Math.min(j + perStatement, rows.length))));
    }
    const [first, ...rest] = statements;
    await d.batch([first!, ...rest]);
  }
}

describe("the D1 guard in the test setup", () => {
  it("refuses what production's D1 refuses, naming the limit and the statement", async () => {
    const placeholders = Array.from({ length: 101 }, () => "?").join(", ");
    const params = await breachOf(async () =>
      env.DB.prepare(`SELECT 1 WHERE 1 IN (${placeholders})`)
        .bind(...Array.from({ length: 101 }, (_, i) => i))
        .all(),
    );
    expect(params).toContain("101 bound parameters");
    expect(params).toContain("SELECT 1 WHERE 1 IN");

    const like = await breachOf(async () =>
      env.DB.prepare("SELECT 1 WHERE 'a' LIKE ?")
        .bind(`%${"é".repeat(25)}%`)
        .all(),
    );
    expect(like).toContain("LIKE/GLOB pattern of 52 bytes");

    const long = await breachOf(async () => env.DB.prepare(`SELECT 1 /* ${"x".repeat(100_000)} */`).all());
    expect(long).toContain("statement over 100000 bytes");

    const big = await breachOf(async () => env.DB.prepare("SELECT length(?)").bind("x".repeat(1_000_001)).all());
    expect(big).toContain("a value of 1000001 bytes");

    const wide = Array.from({ length: 33 }, (_, i) => `${i}`).join(", ");
    const args = await breachOf(async () => env.DB.prepare(`SELECT max(${wide})`).all());
    expect(args).toContain("over 32 arguments");
  });

  it("counts the queries of one invocation", async () => {
    const within = await asInvocation(async () => {
      for (let i = 0; i < D1_LIMITS.queriesPerInvocation; i++) await env.DB.prepare("SELECT 1").first();
      return "ok";
    });
    expect(within).toBe("ok");
    const over = await breachOf(() =>
      asInvocation(async () => {
        for (let i = 0; i <= D1_LIMITS.queriesPerInvocation; i++) await env.DB.prepare("SELECT 1").first();
      }),
    );
    expect(over).toContain("over 1000 queries in one invocation");
  });
});

describe("paths that grow with data stay inside D1's limits", () => {
  it(
    "a long or multi-byte tour search answers, % and _ match literally, and past 100 characters it " + "is 422",
    async () => {
      const t = await makeTenant();
      const address = `${"Harbour ".repeat(6)}100% Lane_1 ${"こんにちは".repeat(12)}`;
      const created = await call("/api/v1/tours", {
        key: t.key,
        body: { address, city: "Portside", state: "CA", zipcode: "94110" },
      });
      expect(created.status, created.text).toBe(201);
      const search = (term: string) => call(`/api/v1/tours?search=${encodeURIComponent(term)}`, { key: t.key });

      const ascii = await search("harbour ".repeat(6).trim());
      expect(ascii.status, ascii.text).toBe(200);
      expect(ascii.json.total).toBe(1);
      const multibyte = await search("こんにちは".repeat(12));
      expect(multibyte.status, multibyte.text).toBe(200);
      expect(multibyte.json.tours.map((x: { address: string }) => x.address)).toEqual([address]);
      expect((await search("100%")).json.total).toBe(1);
      expect((await search("Lane_1")).json.total).toBe(1);
      expect((await search("10_%")).json.total).toBe(0);
      expect((await search("Lane%1")).json.total).toBe(0);
      expectError(await search("x".repeat(101)), 422, "request_query_invalid");
    },
  );

  it("a manager with hundreds of people under them moves to another agency with all of them", async () => {
    const from = await makeTenant();
    const to = await makeTenant();
    const rows = Array.from({ length: 320 }, (_, i) => ({
      id: newId("usr"),
      agencyId: from.agencyId,
      role: "agent",
      managerId: from.teamLead.id,
      name: `Agent ${i}`,
      email: `${unique("bulk")}@example.test`,
    }));
    await insertMany(users, rows);
    const moved = await internal(`/internal/v1/users/${from.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: to.owner.id },
    });
    expect(moved.status, moved.text).toBe(200);
    const inNewAgency = await db().select({ id: users.id }).from(users).where(eq(users.agencyId, to.agencyId)).all();
    // The new agency's own four, the team lead, its agent and the 320 below it.
    expect(inNewAgency).toHaveLength(4 + 2 + 320);
    const cycle = await internal(`/internal/v1/users/${from.teamLead.id}/manager`, {
      method: "PATCH",
      body: { manager_id: rows[7]!.id },
    });
    expectError(cycle, 422, "hierarchy_cycle");
  });

  it("the internal deliveries list pages through hundreds of deliveries with their attempts", async () => {
    const t = await makeTenant();
    const endpointId = newId("whe");
    await db()
      .insert(webhookEndpoints)
      .values({ id: endpointId, agencyId: t.agencyId, url: "https://hooks.example.com/x", secretSealed: "sealed" });
    const eventRows = Array.from({ length: 250 }, () => ({
      id: newId("evt"),
      agencyId: t.agencyId,
      eventType: "listing.created",
      apiVersion: "2026-11-01",
      timestamp: 1,
      data: {},
      enqueuedAt: new Date().toISOString(),
    }));
    await insertMany(events, eventRows);
    const deliveryRows = eventRows.map((e) => ({
      id: newId("whd"),
      eventId: e.id,
      endpointId,
      agencyId: t.agencyId,
      status: "dead" as const,
      attempts: 2,
    }));
    await insertMany(webhookDeliveries, deliveryRows);
    await insertMany(
      webhookDeliveryAttempts,
      deliveryRows.flatMap((d) =>
        [1, 2].map((attempt) => ({
          id: newId("wha"),
          deliveryId: d.id,
          attempt,
          attemptedAt: new Date().toISOString(),
          responseStatus: 503,
          latencyMs: 10,
        })),
      ),
    );
    const first = await internal(`/internal/v1/agencies/${t.agencyId}/webhook-deliveries?limit=200`);
    expect(first.status, first.text).toBe(200);
    expect(first.json.data).toHaveLength(200);
    expect(first.json.data.every((d: { attempt_log: unknown[] }) => d.attempt_log.length === 2)).toBe(true);
    const rest = await internal(
      `/internal/v1/agencies/${t.agencyId}/webhook-deliveries?limit=200&cursor=${first.json.next_cursor}`,
    );
    expect(rest.status, rest.text).toBe(200);
    expect(rest.json.data).toHaveLength(50);
    expect(rest.json.next_cursor).toBe("");
  });
});
