import { createExecutionContext, createMessageBatch, getQueueResult, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { inArray, sql } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { events } from "../../src/db/schema";
import worker from "../../src/index";
import { Coalescer } from "../../src/lib/coalescer";
import { backgroundDrainDone, kickOutbox } from "../../src/webhooks/outbox/kick";
import { db, makeTenant } from "../support/harness";
import { captureQueue, emptyOutbox, insertEvents, registerEndpoints } from "../support/webhook-fixtures";
import { settle } from "../support/webhook-harness";

afterEach(() => vi.restoreAllMocks());

const among = (ids: string[]) => sql`(SELECT value FROM json_each(${JSON.stringify(ids)}))`;

/** A task whose runs the test finishes one by one. */
function steppedTask() {
  const pending: ((more: boolean) => void)[] = [];
  let started = 0;
  const task = () =>
    new Promise<boolean>((resolve) => {
      started++;
      pending.push(resolve);
    });
  const finishRun = async (more = false) => {
    for (let i = 0; i < 50 && !pending.length; i++) await new Promise((r) => setTimeout(r, 1));
    pending.shift()!(more);
    await new Promise((r) => setTimeout(r, 1));
  };
  return { task, finishRun, started: () => started };
}

describe("the coalescer behind the outbox kick", () => {
  it("serves every demand made during a run with one more run", async () => {
    const t = steppedTask();
    const c = new Coalescer(t.task, { spacingMs: 0, maxRuns: 4, onError: () => undefined });
    const first = c.demand();
    const during = [c.demand(), c.demand(), c.demand()];
    await t.finishRun();
    await t.finishRun();
    await Promise.all([first, ...during]);
    expect(t.started()).toBe(2);
  });

  it("serves a demand made during a run that does not cover it with a run of its own, made by that demand", async () => {
    const t = steppedTask();
    const c = new Coalescer(t.task, { spacingMs: 0, maxRuns: 2, onError: () => undefined });
    let served = false;
    const first = c.demand();
    const late = c.demand().then(() => {
      served = true;
    }); // during run 1, which began before it
    await t.finishRun();
    await first;
    expect(served).toBe(false);
    await t.finishRun();
    await late;
    expect(served).toBe(true);
    expect(t.started()).toBe(2);
  });

  it("never has a demand await a promise another demand made", async () => {
    // Each demand runs or waits in its own invocation: a demand whose own run is done resolves
    // even while a later demand's run is still under way, and never waits for that run.
    const t = steppedTask();
    const c = new Coalescer(t.task, { spacingMs: 0, maxRuns: 4, onError: () => undefined });
    let firstDone = false;
    const first = c.demand().then(() => {
      firstDone = true;
    });
    const second = c.demand();
    await t.finishRun();
    await first;
    expect(firstDone).toBe(true);
    await t.finishRun(); // the second demand's own run, which the first never waited for
    await second;
    expect(t.started()).toBe(2);
  });

  it("runs again while a run reports a full page, within the bound, then hands the rest on", async () => {
    const t = steppedTask();
    let handedOn = 0;
    const c = new Coalescer(t.task, {
      spacingMs: 0,
      maxRuns: 3,
      onError: () => undefined,
      onBound: async () => {
        handedOn++;
      },
    });
    const done = c.demand();
    for (let i = 0; i < 3; i++) await t.finishRun(true);
    await done;
    expect(t.started()).toBe(3);
    expect(handedOn).toBe(1);
    // A chain whose last page was not full hands nothing on.
    const again = c.demand();
    await t.finishRun(false);
    await again;
    expect(handedOn).toBe(1);
  });

  it("tells onError of a failed run and stops the chain; the next demand starts another", async () => {
    const errors: unknown[] = [];
    let calls = 0;
    const c = new Coalescer(
      async () => {
        calls++;
        if (calls === 1) throw new Error("d1 down");
        return false;
      },
      { spacingMs: 0, maxRuns: 4, onError: (err) => errors.push(err) },
    );
    await c.demand();
    expect(errors).toHaveLength(1);
    await c.demand();
    expect(calls).toBe(2);
    expect(errors).toHaveLength(1);
  });

  it("starts runs of one chain no sooner than the spacing apart", async () => {
    const starts: number[] = [];
    const c = new Coalescer(
      async () => {
        starts.push(Date.now());
        return starts.length < 3;
      },
      { spacingMs: 40, maxRuns: 5, onError: () => undefined },
    );
    await c.demand();
    expect(starts).toHaveLength(3);
    for (let i = 1; i < starts.length; i++) expect(starts[i]! - starts[i - 1]!).toBeGreaterThanOrEqual(39);
  });
});

describe("no event left behind by the drain after writes", () => {
  it("sends an event written during the last back-to-back drain without another write or the sweep", async () => {
    const t = await makeTenant();
    await registerEndpoints(t, 1, `z${Math.random().toString(36).slice(2, 8)}`);
    await emptyOutbox();
    await settle();
    const queue = captureQueue();
    const sendBatch = queue.sendBatch.getMockImplementation()!;
    const written: string[] = [];
    const waiting: Promise<unknown>[] = [];
    const ctx = { waitUntil: (p: Promise<unknown>) => void waiting.push(p) };
    // Every drain that sends finds a new write landing while it runs, kicking as a request does:
    // the drains run back to back up to their bound, and the write during the last is left to its kick.
    const WRITES = 12;
    queue.sendBatch.mockImplementation(async (messages, options) => {
      if (written.length < WRITES) {
        written.push(...(await insertEvents(t.agencyId, 1, { firstCreatedAt: Date.now() - 1_000 })));
        kickOutbox(env, ctx);
      }
      return sendBatch(messages, options);
    });
    written.push(...(await insertEvents(t.agencyId, 1, { firstCreatedAt: Date.now() - 1_000 })));
    kickOutbox(env, ctx);
    while (waiting.length) await Promise.all(waiting.splice(0));
    await backgroundDrainDone();
    expect(written).toHaveLength(WRITES);
    const unsent = await db()
      .select({ id: events.id, enqueuedAt: events.enqueuedAt })
      .from(events)
      .where(inArray(events.id, among(written)))
      .all();
    expect(unsent.filter((e) => e.enqueuedAt === null)).toEqual([]);
    expect(queue.sent).toHaveLength(WRITES);
  });

  it("sends a burst of more than one page after a single kick", async () => {
    const t = await makeTenant();
    await registerEndpoints(t, 1, `y${Math.random().toString(36).slice(2, 8)}`);
    await emptyOutbox();
    await settle();
    const queue = captureQueue();
    const ids = await insertEvents(t.agencyId, 180, { firstCreatedAt: Date.now() - 1_000 });
    const waiting: Promise<unknown>[] = [];
    kickOutbox(env, { waitUntil: (p) => void waiting.push(p) });
    await Promise.all(waiting);
    await backgroundDrainDone();
    const rows = await db()
      .select({ enqueuedAt: events.enqueuedAt })
      .from(events)
      .where(inArray(events.id, among(ids)))
      .all();
    expect(rows.filter((e) => e.enqueuedAt === null)).toHaveLength(0);
    expect(queue.sent).toHaveLength(180);
  });
});

describe("a burst larger than one chain of drains", () => {
  it("continues in the media queue's next batch, without another write or the sweep", async () => {
    const t = await makeTenant();
    await registerEndpoints(t, 1, `w${Math.random().toString(36).slice(2, 8)}`);
    await emptyOutbox();
    await settle();
    const queue = captureQueue();
    const handedOn: unknown[] = [];
    vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body) => {
      handedOn.push(body);
      return {} as QueueSendResponse;
    });
    // 12 pages of one agency's share (25): more than the 8 drains one kick runs.
    const ids = await insertEvents(t.agencyId, 300, { firstCreatedAt: Date.now() - 1_000 });
    const unsent = async () =>
      (
        await db()
          .select({ enqueuedAt: events.enqueuedAt })
          .from(events)
          .where(inArray(events.id, among(ids)))
          .all()
      ).filter((e) => e.enqueuedAt === null).length;
    const waiting: Promise<unknown>[] = [];
    kickOutbox(env, { waitUntil: (p) => void waiting.push(p) });
    await Promise.all(waiting);
    await backgroundDrainDone();
    expect(await unsent()).toBeGreaterThan(0);
    expect(handedOn).toEqual([{ kind: "outbox.drain" }]);

    // The media queue's batch that takes the hand-off drains the rest.
    const batch = createMessageBatch("alms-media-local", [
      { id: "m0", timestamp: new Date(), attempts: 1, body: handedOn[0] },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    await waitOnExecutionContext(ctx);
    await backgroundDrainDone();
    expect(await getQueueResult(batch, ctx)).toMatchObject({ explicitAcks: ["m0"] });
    expect(await unsent()).toBe(0);
    expect(queue.sent).toHaveLength(300);
  });
});
