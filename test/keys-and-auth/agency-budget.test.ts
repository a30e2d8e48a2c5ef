import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import { keyGate } from "../../src/accounts/key-changes";
import { mintKey } from "../../src/domain/api-keys";
import { AGENCY_BUDGET_FACTOR, DEFAULT_BUDGETS } from "../../src/domain/budgets";
import { agencyBudget } from "../../src/durable/budget-lease";
import { LEASE_MS } from "../../src/durable/key-gate/leases";
import { call, db, expectError, makePlatformKey, makeTenant, type Tenant } from "../support/harness";

const ENDPOINT = "get_webhook_catalog";
const KEY_BUDGET = DEFAULT_BUDGETS[ENDPOINT];
const AGENCY_BUDGET = KEY_BUDGET * AGENCY_BUDGET_FACTOR;
const catalog = (key: string) => call("/api/v1/webhooks/events", { key });

/** Key ids by secret, of the keys minted here. */
const idOf = new Map<string, string>();

/** More keys of the tenant's agency, minted by its owner. */
async function moreKeys(t: Tenant, n: number): Promise<string[]> {
  const keys: string[] = [];
  for (let i = 0; i < n; i++) {
    const { key, secret } = await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "test" });
    idOf.set(secret, key.id);
    keys.push(secret);
  }
  return keys;
}

/** Runs each gate's alarm as it would run once the leases taken now have ended. */
async function endLeases(keyIds: string[]): Promise<void> {
  vi.useFakeTimers({ now: Date.now() + LEASE_MS + 500, toFake: ["Date"] });
  try {
    for (const id of keyIds) await runDurableObjectAlarm(keyGate(env, id));
  } finally {
    vi.useRealTimers();
  }
}

const limits = async (key: string) => {
  const r = await call("/api/v1/limits", { key });
  expect(r.status, r.text).toBe(200);
  return r.json;
};

describe("the agency's budget, shared by all its keys", () => {
  it("holds across many keys: minting more keys does not multiply what the agency may send", async () => {
    const t = await makeTenant();
    const keys = [t.key, ...(await moreKeys(t, AGENCY_BUDGET_FACTOR))];
    const statuses: number[][] = [];
    for (const key of keys) {
      const mine: number[] = [];
      for (let i = 0; i < KEY_BUDGET; i++) mine.push((await catalog(key)).status);
      statuses.push(mine);
    }
    // The first keys use their whole budgets, which together are the agency's; the next key gets nothing.
    for (const mine of statuses.slice(0, AGENCY_BUDGET_FACTOR)) expect(mine.every((s) => s === 200)).toBe(true);
    expect(
      statuses.at(-1)!.every((s) => s === 429),
      JSON.stringify(statuses.at(-1)),
    ).toBe(true);

    const refused = await catalog(keys.at(-1)!);
    expectError(refused, 429, "rate_limit_exceeded");
    const body = refused.json;
    expect(body.error.details).toMatchObject({ endpoint: ENDPOINT, limit: AGENCY_BUDGET, reason: "agency_budget" });
    expect(body.error.message).toMatch(/agency/);
    expect(refused.headers.get("x-rate-limit-limit")).toBe(String(AGENCY_BUDGET));
    expect(refused.headers.get("x-rate-limit-remaining")).toBe("0");
    expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0);

    // The refused key's own window counted nothing; the agency's is spent.
    const seen = await limits(keys.at(-1)!);
    expect(seen.budgets[ENDPOINT]).toMatchObject({ limit: KEY_BUDGET, remaining: KEY_BUDGET });
    expect(seen.agency_budgets[ENDPOINT]).toMatchObject({ limit: AGENCY_BUDGET, remaining: 0 });
    // Another endpoint's budgets are untouched.
    expect(seen.agency_budgets.read_listings_list).toMatchObject({
      limit: DEFAULT_BUDGETS.read_listings_list * AGENCY_BUDGET_FACTOR,
      remaining: DEFAULT_BUDGETS.read_listings_list * AGENCY_BUDGET_FACTOR,
    });
    expect((await call("/api/v1/listings", { key: keys.at(-1)! })).status).toBe(200);

    // Another agency is not held by this one's.
    const other = await makeTenant();
    expect((await catalog(other.key)).status).toBe(200);
  });

  it("holds under concurrent requests of many keys, and gets back what their leases left unused", async () => {
    const t = await makeTenant();
    const keys = [t.key, ...(await moreKeys(t, AGENCY_BUDGET_FACTOR))];
    const burst = await Promise.all(keys.flatMap((key) => Array.from({ length: KEY_BUDGET }, () => catalog(key))));
    const admitted = burst.filter((r) => r.status === 200).length;
    const byAgency = burst.filter((r) => r.status === 429 && r.json.error.details.reason === "agency_budget");
    expect(admitted, `${admitted} admitted of ${burst.length}`).toBeLessThanOrEqual(AGENCY_BUDGET);
    expect(byAgency.length).toBeGreaterThan(0);
    expect(burst.every((r) => r.status === 200 || r.status === 429)).toBe(true);

    // Once the leases are over, what they left unused is the agency's again: the window holds exactly what ran.
    await endLeases([t.keyId, ...keys.slice(1).map((key) => idOf.get(key)!)]);
    const used = (await agencyBudget(env, t.agencyId).used())[ENDPOINT];
    expect(used?.used).toBe(admitted);
    const seen = await limits(t.key);
    expect(seen.agency_budgets[ENDPOINT].remaining).toBe(AGENCY_BUDGET - admitted);
  }, 60_000);

  it("lets a key an administrator raised keep its raised budget, and holds the other keys to the agency's", async () => {
    const t = await makeTenant();
    const admin = await makePlatformKey(t.agencyId, { scopes: ["admin"] });
    const raised = AGENCY_BUDGET + 20;
    const set = await call(`/api/v1/admin/api-keys/${t.keyId}/rate-limits`, {
      method: "PATCH",
      key: admin.key,
      body: { overrides: { [ENDPOINT]: raised } },
    });
    expect(set.status, set.text).toBe(200);
    const [plain] = await moreKeys(t, 1);

    const statuses: number[] = [];
    for (let i = 0; i < AGENCY_BUDGET + 10; i++) statuses.push((await catalog(t.key)).status);
    expect(
      statuses.filter((s) => s !== 200),
      "the raised key ran past the agency's default budget",
    ).toEqual([]);
    const refused = await catalog(plain!);
    expectError(refused, 429, "rate_limit_exceeded");
    expect(refused.json.error.details).toMatchObject({ limit: AGENCY_BUDGET, reason: "agency_budget" });
    // The raised key still has its last requests.
    expect((await catalog(t.key)).status).toBe(200);
  });
});
