import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { mediaUploads } from "../../src/db/schema";
import worker from "../../src/index";
import { COPY_SLOTS } from "../../src/media/delivery/batch-budget";
import type { MediaJob } from "../../src/media/jobs";
import { call, db, makeListing, makeTenant, mockFetch, type Tenant } from "../support/harness";
import { configureDestination } from "../support/media-fixtures";

const ENDPOINT = "https://s3.batch.test";

let sent: MediaJob[];
/** PUTs to the agent's storage that started and are held until the test releases them. */
let held: { name: string; release: () => void }[];

beforeEach(() => {
  sent = [];
  held = [];
  vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body: unknown) => {
    sent.push(body as MediaJob);
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } } as unknown as QueueSendResponse;
  });
  // A slow destination: each PUT answers only when the test releases it.
  mockFetch(async (req) => {
    if (new URL(req.url).origin !== ENDPOINT) throw new Error(`unexpected outbound fetch to ${req.url}`);
    await req.arrayBuffer();
    await new Promise<void>((release) => {
      held.push({ name: decodeURIComponent(new URL(req.url).pathname.split("/").pop()!), release });
    });
    return new Response(null, { status: 200, headers: { ETag: '"x"' } });
  });
});
afterEach(() => vi.restoreAllMocks());

const configure = (t: Tenant) => configureDestination(t, ENDPOINT);

async function announce(t: Tenant, listingNumber: string, filename: string) {
  const r = await call("/api/v1/media/upload", {
    key: t.key,
    body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 64, listing_number: listingNumber, filename },
  });
  expect(r.status, r.text).toBe(201);
  return r.json as { upload_id: string; url: string; headers: Record<string, string> };
}

/** A listing of `t` with one file uploaded through the Worker's path: answers the delivery job it started. */
async function deliveryOf(t: Tenant, filename: string) {
  const listing = await makeListing(t);
  const a = await announce(t, listing.listing_number, filename);
  const res = await worker.fetch(
    new Request(a.url, { method: "PUT", headers: a.headers, body: new Uint8Array(64) }),
    env,
    createExecutionContext(),
  );
  expect(res.status, await res.clone().text()).toBe(200);
  const job = sent.at(-1)!;
  expect(job, JSON.stringify(sent)).toMatchObject({ kind: "delivery" });
  return job;
}

/** Starts a batch without waiting for it; answers its end and its messages. */
function startBatch(bodies: unknown[]) {
  const batch = createMessageBatch(
    "alms-media-local",
    bodies.map((body, i) => ({ id: `m${i + 1}`, timestamp: new Date(), attempts: 1, body })),
  );
  const acks = batch.messages.map((m) => vi.spyOn(m, "ack"));
  const ctx = createExecutionContext();
  const done = worker.queue(batch, env, ctx).then(() => getQueueResult(batch, ctx));
  return { done, acks };
}

const putsStarted = (n: number) =>
  vi.waitFor(() => expect(held.map((h) => h.name)).toHaveLength(n), { timeout: 5_000, interval: 10 });

describe("a media batch is fair between agencies", () => {
  it("another agency's upload completes while one agency's long delivery runs", async () => {
    const a = await makeTenant();
    await configure(a);
    const delivery = await deliveryOf(a, "walkthrough.mp4.jpg");

    // Agency b's file reached R2 through a pre-signed URL nobody reported: its settle job completes it.
    const b = await makeTenant();
    const bListing = await makeListing(b);
    const bUpload = await announce(b, bListing.listing_number, "front.jpg");
    const row = await db().select().from(mediaUploads).where(eq(mediaUploads.id, bUpload.upload_id)).get();
    await env.UPLOADS.put(row!.objectKey, new Uint8Array(64));

    const { done, acks } = startBatch([delivery, { kind: "upload.settle", upload_id: bUpload.upload_id }]);
    await putsStarted(1);
    await vi.waitFor(() => expect(acks[1]).toHaveBeenCalled(), { timeout: 5_000, interval: 10 });
    const settled = await db().select().from(mediaUploads).where(eq(mediaUploads.id, bUpload.upload_id)).get();
    expect(settled?.status).toBe("completed");
    // Agency a's delivery is still copying: its message is not settled yet.
    expect(acks[0]).not.toHaveBeenCalled();

    for (const h of held) h.release();
    const result = await done;
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2"]);
  });

  it("one agency's deliveries do not hold every copy slot while another agency's delivery waits", async () => {
    const a = await makeTenant();
    await configure(a);
    const b = await makeTenant();
    await configure(b);
    const aJobs = [await deliveryOf(a, "a1.jpg"), await deliveryOf(a, "a2.jpg"), await deliveryOf(a, "a3.jpg")];
    const bJob = await deliveryOf(b, "b1.jpg");

    const { done } = startBatch([...aJobs, bJob]);
    await putsStarted(COPY_SLOTS);
    // Give any copy that could still start the chance to.
    await new Promise((r) => setTimeout(r, 100));
    const first = held.map((h) => h.name).sort();
    expect(first, JSON.stringify(first)).toHaveLength(COPY_SLOTS);
    expect(first, JSON.stringify(first)).toContain("b1.jpg");

    // Released one by one: each freed slot lets the next waiting copy start, never more than the slots at once.
    for (let released = 0; released < 4; released++) {
      await vi.waitFor(() => expect(held.length).toBeGreaterThan(0), { timeout: 5_000, interval: 10 });
      expect(held.length).toBeLessThanOrEqual(COPY_SLOTS);
      held.shift()!.release();
    }
    const result = await done;
    expect(result.explicitAcks.sort()).toEqual(["m1", "m2", "m3", "m4"]);
  });
});
