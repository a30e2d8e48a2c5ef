import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { idempotencyMarks, listings } from "../../src/db/schema";
import { BASE, db, direct, expectError, makeTenant, outbox, type Tenant } from "../support/harness";

const createListing = (t: Tenant, idempotencyKey: string) =>
  new Request(`${BASE}/api/v1/listings`, {
    method: "POST",
    headers: { "X-API-Key": t.key, "Content-Type": "application/json", "X-Idempotency-Key": idempotencyKey },
    body: JSON.stringify({ address: "1 Overload Way", owner_user_id: t.owner.id, agent_one_id: t.agent.id }),
  });

const overloaded = () =>
  Object.assign(new Error("Durable Object is overloaded. Requests queued for too long."), {
    overloaded: true,
  });
const retryable = () =>
  Object.assign(new Error("Durable Object storage operation exceeded timeout"), {
    retryable: true,
  });

async function nothingWritten(t: Tenant) {
  expect(await db().select().from(listings).where(eq(listings.agencyId, t.agencyId)).all()).toEqual([]);
  expect(await db().select().from(idempotencyMarks).where(eq(idempotencyMarks.agencyId, t.agencyId)).all()).toEqual([]);
  expect(await outbox(t.agencyId, "listing.created")).toEqual([]);
}

describe("a Durable Object failing on the request path", () => {
  it(
    "an overloaded key gate is 503 rate_limit_unavailable with the longer Retry-After; nothing is " + "written",
    async () => {
      const t = await makeTenant();
      const gate = { getByName: () => ({ admit: () => Promise.reject(overloaded()) }) };
      const r = await direct(createListing(t, "gate-overloaded"), { KEY_GATE: gate });
      expectError(r, 503, "rate_limit_unavailable");
      expect(r.headers.get("Retry-After")).toBe("10");
      await nothingWritten(t);
    },
  );

  it("a retryable key gate error is 503 rate_limit_unavailable with Retry-After; nothing is written", async () => {
    const t = await makeTenant();
    const gate = { getByName: () => ({ admit: () => Promise.reject(retryable()) }) };
    const r = await direct(createListing(t, "gate-retryable"), { KEY_GATE: gate });
    expectError(r, 503, "rate_limit_unavailable");
    expect(r.headers.get("Retry-After")).toBe("5");
    await nothingWritten(t);
  });

  it("an overloaded idempotency ledger is 503 idempotency_unavailable with the longer Retry-After", async () => {
    const t = await makeTenant();
    const lock = { getByName: () => ({ begin: () => Promise.reject(overloaded()) }) };
    const r = await direct(createListing(t, "lock-overloaded"), { IDEMPOTENCY: lock });
    expectError(r, 503, "idempotency_unavailable");
    expect(r.headers.get("Retry-After")).toBe("10");
    await nothingWritten(t);
  });

  it("a retryable idempotency ledger error is 503 idempotency_unavailable; a later try runs once", async () => {
    const t = await makeTenant();
    const lock = { getByName: () => ({ begin: () => Promise.reject(retryable()) }) };
    const r = await direct(createListing(t, "lock-retryable"), { IDEMPOTENCY: lock });
    expectError(r, 503, "idempotency_unavailable");
    expect(r.headers.get("Retry-After")).toBe("5");
    await nothingWritten(t);
    const retried = await direct(createListing(t, "lock-retryable"), {});
    expect(retried.status, retried.text).toBe(201);
    expect(await outbox(t.agencyId, "listing.created")).toHaveLength(1);
  });
});
