import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq, inArray, isNotNull, isNull } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { apiKeySecrets, events } from "../../src/db/schema";
import { outboxInsert } from "../../src/domain/events/outbox";
import worker from "../../src/index";
import { captureErrorLogs, db, makeTenant } from "../support/harness";

afterEach(() => vi.restoreAllMocks());

const DAY = 24 * 3600_000;

async function nightly() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "0 3 * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** `n` secrets of the tenant's key whose rotation grace ended long ago. */
async function expiredSecrets(keyId: string, n: number) {
  const supersededAt = new Date(Date.now() - 40 * DAY).toISOString();
  const rows = Array.from({ length: n }, () => ({
    hash: crypto.randomUUID(),
    keyId,
    prefix: "sk_test_",
    last4: "abcd",
    supersededAt,
  }));
  for (let i = 0; i < rows.length; i += 10)
    await db()
      .insert(apiKeySecrets)
      .values(rows.slice(i, i + 10));
  return rows.length;
}

const stillActive = async (keyIds: string[]) =>
  (
    await db()
      .select({ hash: apiKeySecrets.hash })
      .from(apiKeySecrets)
      .where(
        and(
          inArray(apiKeySecrets.keyId, keyIds),
          isNotNull(apiKeySecrets.supersededAt),
          isNull(apiKeySecrets.deactivatedAt),
        ),
      )
  ).length;

describe("the nightly job", () => {
  it("sweeps rotated secrets in pages, up to a ceiling per night; the rest the next night", async () => {
    const keys = await Promise.all([makeTenant(), makeTenant(), makeTenant()]);
    // 10 pages of 50 a night (docs/limits.md).
    const ceiling = 500;
    let total = 0;
    const sizes = [ceiling + 20 - 300, 150, 150];
    for (const [i, t] of keys.entries()) total += await expiredSecrets(t.keyId, sizes[i]!);
    expect(total).toBe(ceiling + 20);
    await nightly();
    expect(await stillActive(keys.map((k) => k.keyId))).toBe(20);
    await nightly();
    expect(await stillActive(keys.map((k) => k.keyId))).toBe(0);
  });

  it("runs each sweep on its own: a failing one is logged, and retention still runs", async () => {
    const t = await makeTenant();
    const d = db();
    const [oldEvent] = await outboxInsert(d, t.agencyId, "user.deactivated", {
      user_id: "usr_1",
      reason: "deactivated",
    }).returning();
    const at = new Date(Date.now() - 31 * DAY).toISOString();
    await d.update(events).set({ createdAt: at, enqueuedAt: at }).where(eq(events.id, oldEvent!.id));
    const prepare = env.DB.prepare.bind(env.DB);
    vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
      if (/update "api_key_secrets"/i.test(query)) throw new Error("D1 is briefly unavailable");
      return prepare(query);
    });
    const logs = captureErrorLogs();
    await nightly();
    vi.mocked(env.DB.prepare).mockRestore();
    expect(await d.select().from(events).where(eq(events.id, oldEvent!.id))).toEqual([]);
    expect(logs).toContainEqual(
      expect.objectContaining({ level: "error", message: "nightly job failed", job: "rotation_sweep" }),
    );
  });
});
