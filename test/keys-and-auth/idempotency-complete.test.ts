import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { CachedResponse } from "../../src/durable/idempotency-ledger";
import { ledgerName } from "../../src/http/admission/idempotency-claim";
import worker from "../../src/index";
import { BASE, call, makeTenant, type Tenant } from "../support/harness";

const createRequest = (t: Tenant, idem: string) =>
  new Request(`${BASE}/api/v1/listings`, {
    method: "POST",
    headers: { "X-API-Key": t.key, "X-Idempotency-Key": idem, "Content-Type": "application/json" },
    body: JSON.stringify({ address: "4 Deferred Row", owner_user_id: t.owner.id, agent_one_id: t.agent.id }),
  });
const ledgerOf = (t: Tenant, key: string) => env.IDEMPOTENCY.getByName(ledgerName(t.agencyId, key));
const cached = (status: number): CachedResponse => ({ status, headers: [], body: "sealed" });

describe("the ledger learns a write's answer after the response", () => {
  it("answers the write without waiting for the ledger to record it, and replays it exactly afterwards", async () => {
    const t = await makeTenant();
    let recorded!: () => void;
    const completed = new Promise<void>((resolve) => {
      recorded = resolve;
    });
    const events: string[] = [];
    const IDEMPOTENCY = {
      getByName(name: string) {
        const stub = env.IDEMPOTENCY.getByName(name);
        return {
          begin: (...args: Parameters<typeof stub.begin>) => stub.begin(...args),
          release: (...args: Parameters<typeof stub.release>) => stub.release(...args),
          discard: (...args: Parameters<typeof stub.discard>) => stub.discard(...args),
          async complete(...args: Parameters<typeof stub.complete>) {
            events.push("complete sent");
            // The ledger is slow to answer: the response must not wait for it.
            await new Promise((resolve) => setTimeout(resolve, 300));
            const done = await stub.complete(...args);
            events.push("complete recorded");
            recorded();
            return done;
          },
        };
      },
    } as unknown as Env["IDEMPOTENCY"];

    const ctx = createExecutionContext();
    const res = await worker.fetch(createRequest(t, "deferred-1"), { ...env, IDEMPOTENCY } as Env, ctx);
    events.push("response");
    expect(res.status, await res.clone().text()).toBe(201);
    const first = await res.json<{ listing_number: string }>();
    await waitOnExecutionContext(ctx);
    await completed;
    expect(events).toEqual(["complete sent", "response", "complete recorded"]);

    const again = await worker.fetch(createRequest(t, "deferred-1"), env, createExecutionContext());
    expect(again.status).toBe(201);
    expect(again.headers.get("x-idempotent-replay")).toBe("true");
    expect(await again.json()).toEqual(first);
  });

  it("a duplicate that reaches the ledger before the answer waits for it and is a replay", async () => {
    const t = await makeTenant();
    const ledger = ledgerOf(t, "dup-1");
    const first = await ledger.begin(t.agencyId, "dup-1", "hash-1");
    expect(first.state).toBe("acquired");
    const duplicate = ledger.begin(t.agencyId, "dup-1", "hash-1");
    await new Promise((resolve) => setTimeout(resolve, 20));
    if (first.state !== "acquired") throw new Error("not acquired");
    expect(
      await ledger.complete({ agencyId: t.agencyId, idempotencyKey: "dup-1", token: first.token }, cached(201)),
    ).toBe(true);
    expect(await duplicate).toEqual({ state: "replay", response: cached(201) });
  });

  it("a duplicate of a request still running is 409 in progress after a short wait; after a 5xx it runs", async () => {
    const t = await makeTenant();
    const ledger = ledgerOf(t, "dup-2");
    const first = await ledger.begin(t.agencyId, "dup-2", "hash-2");
    if (first.state !== "acquired") throw new Error("not acquired");
    const started = Date.now();
    expect(await ledger.begin(t.agencyId, "dup-2", "hash-2")).toEqual({ state: "in_progress" });
    expect(Date.now() - started).toBeGreaterThanOrEqual(200);

    // The holder failed with a 5xx: a duplicate waiting at that moment takes the key and runs.
    const waiting = ledger.begin(t.agencyId, "dup-2", "hash-2");
    await new Promise((resolve) => setTimeout(resolve, 20));
    await ledger.release({ agencyId: t.agencyId, idempotencyKey: "dup-2", token: first.token });
    expect(await waiting).toMatchObject({ state: "acquired", recovering: true });
  });

  it("a replay through the API still answers exactly, from the ledger", async () => {
    const t = await makeTenant();
    const a = await call("/api/v1/listings", {
      key: t.key,
      body: { address: "5 Deferred Row", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
      idempotencyKey: "deferred-2",
    });
    expect(a.status, a.text).toBe(201);
    const b = await call("/api/v1/listings", {
      key: t.key,
      body: { address: "5 Deferred Row", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
      idempotencyKey: "deferred-2",
    });
    expect(b.status, b.text).toBe(201);
    expect(b.headers.get("x-idempotent-replay")).toBe("true");
    expect(b.json).toEqual(a.json);
  });
});
