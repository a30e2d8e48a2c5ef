import { createExecutionContext, createScheduledController, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { and, eq, inArray } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import {
  apiKeySecrets,
  appointments,
  calendarDiscrepancies,
  idempotencyMarks,
  providerEvents,
} from "../../src/db/schema";
import { SWEEP_PAGE, sweepProviderEvents } from "../../src/domain/retention";
import worker from "../../src/index";
import { captureErrorLogs, db, internal, makeListing, makeTenant, unique } from "../support/harness";

afterEach(() => vi.restoreAllMocks());

const DAY = 24 * 3600_000;
const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

async function nightly() {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "0 3 * * *", scheduledTime: Date.now() }), env, ctx);
  await waitOnExecutionContext(ctx);
}

/** A shoot of a new listing of the tenant, `endedAgo` before now (negative: ahead). */
async function shootOf(t: Awaited<ReturnType<typeof makeTenant>>, endedAgo: number) {
  const listing = await makeListing(t);
  const r = await internal(`/internal/v1/agencies/${t.agencyId}/listings/${listing.listing_number}/appointments`, {
    method: "POST",
    body: { starts_at: ago(endedAgo + 3600_000), ends_at: ago(endedAgo), calendar_event_id: unique("ev") },
  });
  expect(r.status, r.text).toBe(201);
  return r.json.id as string;
}

const discrepancy = (
  agencyId: string,
  subjectId: string,
  detectedAgo: number,
  resolvedAgo: number | null,
  kind: "missing" | "moved" = "missing",
) => ({
  id: unique("cdx"),
  agencyId,
  subjectType: "appointment" as const,
  subjectId,
  kind,
  detectedAt: ago(detectedAgo),
  resolvedAt: resolvedAgo === null ? null : ago(resolvedAgo),
});

const present = async <T extends { id: string }>(
  rows: T[],
  table: typeof calendarDiscrepancies | typeof providerEvents,
) =>
  (
    await db()
      .select({ id: table.id })
      .from(table)
      .where(
        inArray(
          table.id,
          rows.map((r) => r.id),
        ),
      )
  )
    .map((r) => r.id)
    .sort();

/** One of each kind of row the nightly sweeps keep or forget; answers what should remain. */
async function rowsOfEveryKind() {
  const t = await makeTenant();
  const open = await shootOf(t, -DAY);
  const closed = await shootOf(t, 3 * DAY);
  await db()
    .update(appointments)
    .set({ closedAt: ago(2 * DAY) })
    .where(eq(appointments.id, closed));
  const discrepancies = [
    discrepancy(t.agencyId, open, 100 * DAY, 95 * DAY), // resolved long ago: goes
    discrepancy(t.agencyId, open, 100 * DAY, 10 * DAY), // resolved lately: stays
    discrepancy(t.agencyId, open, 100 * DAY, null), // open on a shoot still checked: stays
    discrepancy(t.agencyId, closed, 100 * DAY, null), // open on a closed shoot, long ago: goes
    discrepancy(t.agencyId, closed, 10 * DAY, null, "moved"), // open on a closed shoot, lately: stays
  ];
  await db().insert(calendarDiscrepancies).values(discrepancies.slice(0, 2));
  await db().insert(calendarDiscrepancies).values(discrepancies.slice(2, 3));
  await db().insert(calendarDiscrepancies).values(discrepancies.slice(3));
  const events = [
    { id: unique("evt_old"), provider: "stripe", type: "invoice.paid", receivedAt: ago(91 * DAY) },
    { id: unique("evt_new"), provider: "stripe", type: "invoice.paid", receivedAt: ago(30 * DAY) },
  ];
  await db().insert(providerEvents).values(events);
  const secret = (deactivatedAgo: number | null) => ({
    hash: unique("hash"),
    keyId: t.keyId,
    prefix: "sk_test_",
    last4: "abcd",
    supersededAt: deactivatedAgo === null ? null : ago(deactivatedAgo + 30 * DAY),
    deactivatedAt: deactivatedAgo === null ? null : ago(deactivatedAgo),
  });
  const secrets = [secret(91 * DAY), secret(10 * DAY)];
  await db().insert(apiKeySecrets).values(secrets);
  const mark = (key: string, expiresAt: string) => ({
    agencyId: t.agencyId,
    idemKey: key,
    requestHash: "h",
    status: 201,
    expiresAt,
  });
  await db()
    .insert(idempotencyMarks)
    .values([mark("expired", ago(60_000)), mark("live", ago(-DAY))]);
  return { t, discrepancies, events, secrets };
}

describe("the nightly retention sweeps", () => {
  it("forget what is past its bound and keep everything else", async () => {
    const { t, discrepancies, events, secrets } = await rowsOfEveryKind();
    await nightly();
    expect(await present(discrepancies, calendarDiscrepancies)).toEqual(
      [discrepancies[1]!.id, discrepancies[2]!.id, discrepancies[4]!.id].sort(),
    );
    expect(await present(events, providerEvents)).toEqual([events[1]!.id]);
    const hashes = await db()
      .select({ hash: apiKeySecrets.hash })
      .from(apiKeySecrets)
      .where(eq(apiKeySecrets.keyId, t.keyId));
    // The key's own current secret stays, with the one that ended lately.
    expect(hashes.map((h) => h.hash)).toContain(secrets[1]!.hash);
    expect(hashes.map((h) => h.hash)).not.toContain(secrets[0]!.hash);
    expect(hashes).toHaveLength(2);
    const marks = await db()
      .select()
      .from(idempotencyMarks)
      .where(and(eq(idempotencyMarks.agencyId, t.agencyId), inArray(idempotencyMarks.idemKey, ["expired", "live"])));
    expect(marks.map((m) => m.idemKey)).toEqual(["live"]);
  });

  it("works in bounded pages: a night's ceiling leaves the rest for the next night", async () => {
    const old = ago(100 * DAY);
    const ids: string[] = [];
    // 25 rows of 4 columns: 100 bound parameters, D1's limit per statement.
    for (let i = 0; i < 24; i++) {
      const rows = Array.from({ length: 25 }, () => ({
        id: unique("evt_p"),
        provider: "stripe",
        type: "x",
        receivedAt: old,
      }));
      ids.push(...rows.map((r) => r.id));
      await db().insert(providerEvents).values(rows);
    }
    const first = await sweepProviderEvents(db(), Date.now(), 1);
    expect(first).toEqual({ rows: SWEEP_PAGE, statements: 1, complete: false });
    const rest = await sweepProviderEvents(db(), Date.now(), 10);
    expect(rest.complete).toBe(true);
    expect(rest.rows).toBeGreaterThanOrEqual(ids.length - SWEEP_PAGE);
    expect(
      await db()
        .select()
        .from(providerEvents)
        .where(inArray(providerEvents.id, ids.slice(0, 90))),
    ).toEqual([]);
  });

  it("runs each sweep on its own: one that throws is logged, and the others still run", async () => {
    const { t, discrepancies, events } = await rowsOfEveryKind();
    const past = await shootOf(t, 3 * DAY);
    const prepare = env.DB.prepare.bind(env.DB);
    vi.spyOn(env.DB, "prepare").mockImplementation((query: string) => {
      if (/delete from "calendar_discrepancies"/i.test(query)) throw new Error("D1 is briefly unavailable");
      return prepare(query);
    });
    const logs = captureErrorLogs();
    await nightly();
    vi.mocked(env.DB.prepare).mockRestore();
    expect(logs).toEqual([
      expect.objectContaining({
        level: "error",
        message: "nightly job failed",
        job: "discrepancy_retention",
        error: expect.stringContaining("D1 is briefly unavailable"),
      }),
    ]);
    // Nothing of the failed sweep, everything of the ones before and after it.
    expect(await present(discrepancies, calendarDiscrepancies)).toHaveLength(discrepancies.length);
    expect(await present(events, providerEvents)).toEqual([events[1]!.id]);
    const closed = await db()
      .select({ closedAt: appointments.closedAt })
      .from(appointments)
      .where(eq(appointments.id, past))
      .get();
    expect(closed?.closedAt).toEqual(expect.any(String));
  });
});
