import { env } from "cloudflare:workers";
import { and, count, eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { idempotencyMarks, webhookEndpoints } from "../../src/db/schema";
import { MAX_ACTIVE_ENDPOINTS } from "../../src/webhooks/endpoints/records";
import { call, db, expectError, makeTenant, mockFetch, type Tenant } from "../support/harness";

const register = (t: Tenant, n: number, idempotencyKey?: string) =>
  call("/api/v1/webhooks/endpoints", {
    key: t.key,
    body: { url: `https://hooks.example.com/${n}`, event_types: ["listing.created"] },
    idempotencyKey,
  });

async function activeEndpoints(agencyId: string) {
  const [row] = await db()
    .select({ n: count() })
    .from(webhookEndpoints)
    .where(and(eq(webhookEndpoints.agencyId, agencyId), eq(webhookEndpoints.isActive, true)));
  return row!.n;
}

// Registrations drain the outbox after each request; keep those messages from the real consumer.
beforeEach(() => {
  vi.spyOn(env.WEBHOOK_QUEUE, "sendBatch").mockResolvedValue({} as QueueSendBatchResponse);
  mockFetch(() => new Response("ok"));
});
afterEach(() => vi.restoreAllMocks());

describe("the active webhook endpoints of an agency", () => {
  it("stop at 16: the 17th is 409 webhook_endpoint_limit_reached, and deleting one makes room", async () => {
    expect(MAX_ACTIVE_ENDPOINTS).toBe(16);
    const t = await makeTenant();
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) {
      const r = await register(t, i);
      expect(r.status, r.text).toBe(201);
      ids.push(r.json.id);
    }
    const refused = await register(t, 16, "the-seventeenth");
    expectError(refused, 409, "webhook_endpoint_limit_reached");
    expect(refused.json.error.details, refused.text).toEqual({ limit: 16 });
    expect(await activeEndpoints(t.agencyId)).toBe(16);
    // The refusal wrote nothing: no endpoint, and no commit mark that a replay could answer 201 from.
    const mark = await db()
      .select()
      .from(idempotencyMarks)
      .where(and(eq(idempotencyMarks.agencyId, t.agencyId), eq(idempotencyMarks.idemKey, "the-seventeenth")))
      .all();
    expect(mark).toEqual([]);
    const replayed = await register(t, 16, "the-seventeenth");
    expect(replayed.status, replayed.text).toBe(409);
    expect(replayed.json.error.code, replayed.text).toBe("webhook_endpoint_limit_reached");

    // Another agency has its own 16.
    const other = await makeTenant();
    const elsewhere = await register(other, 0);
    expect(elsewhere.status, elsewhere.text).toBe(201);

    const del = await call(`/api/v1/webhooks/endpoints/${ids[3]}`, { method: "DELETE", key: t.key });
    expect(del.status, del.text).toBe(204);
    const again = await register(t, 17);
    expect(again.status, again.text).toBe(201);
    expectError(await register(t, 18), 409, "webhook_endpoint_limit_reached");
    expect(await activeEndpoints(t.agencyId)).toBe(16);
  });

  it("concurrent registrations never go past the cap", async () => {
    const t = await makeTenant();
    for (let i = 0; i < 10; i++) expect((await register(t, i)).status).toBe(201);
    const results = await Promise.all(Array.from({ length: 12 }, (_, i) => register(t, 100 + i)));
    const statuses = results.map((r) => r.status);
    expect(
      statuses.filter((s) => s === 201),
      JSON.stringify(results.map((r) => r.json)),
    ).toHaveLength(6);
    for (const r of results.filter((x) => x.status !== 201)) expectError(r, 409, "webhook_endpoint_limit_reached");
    expect(await activeEndpoints(t.agencyId)).toBe(16);
  });

  it("counts only active endpoints", async () => {
    const t = await makeTenant();
    const ids: string[] = [];
    for (let i = 0; i < 16; i++) ids.push((await register(t, i)).json.id);
    await db().update(webhookEndpoints).set({ isActive: false }).where(eq(webhookEndpoints.id, ids[0]!));
    const r = await register(t, 16);
    expect(r.status, r.text).toBe(201);
    expectError(await register(t, 17), 409, "webhook_endpoint_limit_reached");
  });
});
