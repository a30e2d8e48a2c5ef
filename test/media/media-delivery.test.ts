import {
  createExecutionContext,
  createMessageBatch,
  createScheduledController,
  getQueueResult,
  waitOnExecutionContext,
} from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { keyGate } from "../../src/accounts/key-changes";
import { apiKeys, deliveryDestinations, mediaDeliveries, mediaDeliveryFiles, mediaUploads } from "../../src/db/schema";
import worker from "../../src/index";
import { FILES_PER_RUN, PARALLEL_PUTS } from "../../src/media/delivery/attempt";
import { MAX_DELIVERY_ATTEMPTS } from "../../src/media/delivery/retry";
import { STUCK_DELIVERY_MS } from "../../src/media/delivery/stuck";
import type { MediaJob } from "../../src/media/jobs";
import { r2Call } from "../../src/media/r2-call";
import {
  call,
  captureErrorLogs,
  db,
  expectError,
  internal,
  makeListing,
  makeTenant,
  mockFetch,
  outbox,
  type Tenant,
} from "../support/harness";

const ENDPOINT = "https://s3.storage.test";
/** What a refused delivery job leaves in the log. */
const queueDown = expect.objectContaining({ level: "error", job: "delivery", error: "Error: queue down" });
const BUCKET = "agent-bucket";
const SECRET = "agent-secret-access-key-0123456789";

interface Stored {
  url: string;
  method: string;
  headers: Headers;
  bytes: Uint8Array;
}

let sent: { body: MediaJob; delaySeconds?: number }[];
let stored: Stored[];
/** The storage's answer per object path; 200 when absent. A function may vary it per attempt. */
let answers: Record<string, number | "network">;

beforeEach(() => {
  sent = [];
  stored = [];
  answers = {};
  // Jobs are captured and run by hand, so each test decides when the consumer runs.
  vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body: unknown, opts?: QueueSendOptions) => {
    sent.push({ body: body as MediaJob, delaySeconds: opts?.delaySeconds });
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } } as unknown as QueueSendResponse;
  });
  mockFetch(async (req) => {
    const url = new URL(req.url);
    if (url.origin !== ENDPOINT) throw new Error(`unexpected outbound fetch to ${req.url}`);
    const answer = answers[decodeURIComponent(url.pathname)] ?? 200;
    if (answer === "network") throw new Error("connection reset");
    const bytes = new Uint8Array(await req.arrayBuffer());
    if (answer !== 200)
      return new Response(
        `<?xml version="1.0"?><Error><Code>${answer === 403 ? "AccessDenied" : "InternalError"}</Code></Error>`,
        { status: answer },
      );
    stored.push({ url: req.url, method: req.method, headers: req.headers, bytes });
    return new Response(null, { status: 200, headers: { ETag: '"x"' } });
  });
});

afterEach(() => {
  vi.restoreAllMocks();
});

async function configure(t: Tenant, userId = t.agent.id, extra: Record<string, unknown> = {}) {
  const r = await internal(`/internal/v1/users/${userId}/delivery-destination`, {
    method: "PUT",
    body: {
      endpoint_url: ENDPOINT,
      bucket: BUCKET,
      region: "us-east-1",
      access_key_id: "AKIDAGENT",
      secret_access_key: SECRET,
      path_prefix: "/media/",
      ...extra,
    },
  });
  expect(r.status, r.text).toBe(200);
  return r.json;
}

const bytesOf = (seed: number, n: number) => Uint8Array.from({ length: n }, (_, i) => (i * 7 + seed) % 256);

/** Announces files, then PUTs each through the Worker's upload path; answers the upload ids. */
async function upload(
  t: Tenant,
  listingNumber: string,
  files: { name: string; size: number; type?: string; asset?: string }[],
) {
  const announced = [];
  for (const f of files) {
    const r = await call("/api/v1/media/upload", {
      key: t.key,
      body: {
        asset_type: f.asset ?? "photo",
        content_type: f.type ?? "image/jpeg",
        size_bytes: f.size,
        listing_number: listingNumber,
        filename: f.name,
      },
    });
    expect(r.status, r.text).toBe(201);
    announced.push({ ...r.json, seed: announced.length });
  }
  for (const a of announced) {
    const res = await worker.fetch(
      new Request(a.url, { method: "PUT", headers: a.headers, body: bytesOf(a.seed, a.size_bytes) }),
      env,
      createExecutionContext(),
    );
    expect(res.status, await res.clone().text()).toBe(200);
  }
  return announced.map((a) => a.upload_id as string);
}

const deliveryJobs = () =>
  sent.filter((s) => s.body.kind === "delivery").map((s) => s.body as Extract<MediaJob, { kind: "delivery" }>);

async function runJob(body: unknown, opts: { attempts?: number; timestamp?: Date } = {}) {
  const batch = createMessageBatch("alms-media-local", [
    { id: "m1", timestamp: opts.timestamp ?? new Date(), attempts: opts.attempts ?? 1, body },
  ]);
  // The queue result records that a message was retried, not its delay: the delay is read off the call.
  const retry = vi.spyOn(batch.messages[0]!, "retry");
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  return { ...(await getQueueResult(batch, ctx)), retryDelays: retry.mock.calls.map(([o]) => o?.delaySeconds) };
}

const deliveryRow = (id: string) => db().select().from(mediaDeliveries).where(eq(mediaDeliveries.id, id)).get();

async function setup(
  files = [
    { name: "front.jpg", size: 2048 },
    { name: "kitchen.jpg", size: 1500 },
    { name: "plan.pdf", size: 900, type: "application/pdf", asset: "floorplan" },
  ],
) {
  const t = await makeTenant();
  const listing = await makeListing(t);
  await configure(t);
  const uploads = await upload(t, listing.listing_number, files);
  const jobs = deliveryJobs();
  expect(jobs, JSON.stringify(sent)).toHaveLength(1);
  return { t, listing, uploads, deliveryId: jobs[0]!.delivery_id };
}

describe("delivery is triggered when a listing's uploads complete", () => {
  it("one delivery, carrying every file, once the last pending upload of the listing completes", async () => {
    const { listing, uploads, deliveryId } = await setup();
    const row = await deliveryRow(deliveryId);
    expect(row, deliveryId).toMatchObject({ status: "queued", trigger: "upload", filesTotal: 3 });
    const media = await internal(`/internal/v1/agencies/${row!.agencyId}/listings/${listing.listing_number}/media`);
    expect(media.status, media.text).toBe(200);
    expect(media.json.uploads.map((u: { id: string; status: string }) => [u.id, u.status])).toEqual(
      uploads.map((id) => [id, "completed"]),
    );
    expect(media.json.deliveries[0].files.map((f: { upload_id: string }) => f.upload_id).sort()).toEqual(
      [...uploads].sort(),
    );
  });

  it("a listing whose agents configured no storage completes its uploads without a delivery", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    await upload(t, listing.listing_number, [{ name: "a.jpg", size: 10 }]);
    expect(deliveryJobs()).toEqual([]);
  });

  it(
    "when the delivery cannot be queued, the PUT answers 503 and takes the bytes back; a retried " + "PUT succeeds",
    async () => {
      const t = await makeTenant();
      const listing = await makeListing(t);
      await configure(t);
      const r = await call("/api/v1/media/upload", {
        key: t.key,
        body: {
          asset_type: "photo",
          content_type: "image/jpeg",
          size_bytes: 64,
          listing_number: listing.listing_number,
        },
      });
      expect(r.status, r.text).toBe(201);
      vi.mocked(env.MEDIA_QUEUE.send).mockRejectedValueOnce(new Error("queue down"));
      const logs = captureErrorLogs();
      const put = () =>
        worker.fetch(
          new Request(r.json.url, { method: "PUT", headers: r.json.headers, body: bytesOf(1, 64) }),
          env,
          createExecutionContext(),
        );
      const refused = await put();
      const text = await refused.text();
      expect(refused.status, text).toBe(503);
      expect(logs).toEqual([queueDown]);
      expect(JSON.parse(text).error.code).toBe("queue_unavailable");
      expect(refused.headers.get("Retry-After")).toBeTruthy();
      const row = await db().select().from(mediaUploads).where(eq(mediaUploads.id, r.json.upload_id)).get();
      expect(row?.status).toBe("pending");
      expect(await env.UPLOADS.head(row!.objectKey)).toBeNull();
      expect(await db().select().from(mediaDeliveries).where(eq(mediaDeliveries.agencyId, t.agencyId)).all()).toEqual(
        [],
      );

      const again = await put();
      expect(again.status, await again.text()).toBe(200);
      expect(deliveryJobs()).toHaveLength(1);
    },
  );
});

describe("end to end through the real queue", () => {
  it("a local upload is delivered by the queue consumer without anyone driving it", async () => {
    vi.mocked(env.MEDIA_QUEUE.send).mockRestore();
    const t = await makeTenant();
    const listing = await makeListing(t);
    await configure(t);
    await upload(t, listing.listing_number, [{ name: "front.jpg", size: 512 }]);
    await vi.waitFor(
      async () => {
        const events = await outbox(t.agencyId, "media.delivery.completed");
        expect(events, JSON.stringify(stored.map((s) => s.url))).toHaveLength(1);
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(stored.map((s) => decodeURIComponent(new URL(s.url).pathname))).toEqual([
      `/${BUCKET}/media/${listing.listing_number}/photo/front.jpg`,
    ]);
    expect(stored[0]!.bytes).toEqual(bytesOf(0, 512));
  });
});

describe("the delivery job", () => {
  it(
    "success: every file is PUT, SigV4-signed, to the agent's bucket; media.delivery.completed " + "with the summary",
    async () => {
      const { t, listing, uploads, deliveryId } = await setup();
      const result = await runJob({ kind: "delivery", delivery_id: deliveryId });
      expect(result.explicitAcks).toEqual(["m1"]);
      expect(result.retryMessages).toEqual([]);

      const paths = stored.map((s) => decodeURIComponent(new URL(s.url).pathname)).sort();
      const prefix = `/${BUCKET}/media/${listing.listing_number}`;
      expect(paths).toEqual([
        `${prefix}/floorplan/plan.pdf`,
        `${prefix}/photo/front.jpg`,
        `${prefix}/photo/kitchen.jpg`,
      ]);
      const front = stored.find((s) => s.url.endsWith("front.jpg"))!;
      expect(front.method).toBe("PUT");
      expect(front.bytes).toEqual(bytesOf(0, 2048));
      expect(front.headers.get("Content-Type")).toBe("image/jpeg");
      expect(front.headers.get("Authorization")).toMatch(
        /^AWS4-HMAC-SHA256 Credential=AKIDAGENT\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=[^,]*host[^,]*, Signature=[0-9a-f]{64}$/,
      );
      expect(front.headers.get("X-Amz-Content-Sha256")).toBe("UNSIGNED-PAYLOAD");

      expect(await deliveryRow(deliveryId)).toMatchObject({
        status: "completed",
        attempts: 1,
        filesTotal: 3,
        filesDelivered: 3,
        filesFailed: 0,
        error: null,
      });
      const events = await outbox(t.agencyId, "media.delivery.completed");
      expect(events).toHaveLength(1);
      expect(events[0]!.data).toEqual({
        delivery_id: deliveryId,
        listing_number: listing.listing_number,
        summary: { files_total: 3, files_delivered: 3, files_failed: 0, failed: [] },
      });
      expect(await outbox(t.agencyId, "media.delivery.failed")).toEqual([]);
      expect(uploads).toHaveLength(3);
    },
  );

  it("a job run again after the delivery finished changes nothing and emits nothing", async () => {
    const { t, deliveryId } = await setup();
    await runJob({ kind: "delivery", delivery_id: deliveryId });
    const before = stored.length;
    const again = await runJob({ kind: "delivery", delivery_id: deliveryId });
    expect(again.explicitAcks).toEqual(["m1"]);
    expect(stored.length).toBe(before);
    expect(await outbox(t.agencyId, "media.delivery.completed")).toHaveLength(1);
  });

  it(
    "partial failure: a refused file is not retried; the delivery is completed and its summary names the failed " +
      "file",
    async () => {
      const { t, listing, uploads, deliveryId } = await setup();
      answers[`/${BUCKET}/media/${listing.listing_number}/photo/kitchen.jpg`] = 403;
      const result = await runJob({ kind: "delivery", delivery_id: deliveryId });
      expect(result.explicitAcks).toEqual(["m1"]);
      expect(await deliveryRow(deliveryId)).toMatchObject({
        status: "completed",
        filesTotal: 3,
        filesDelivered: 2,
        filesFailed: 1,
      });
      const [event] = await outbox(t.agencyId, "media.delivery.completed");
      expect(event?.data).toEqual({
        delivery_id: deliveryId,
        listing_number: listing.listing_number,
        summary: {
          files_total: 3,
          files_delivered: 2,
          files_failed: 1,
          failed: [{ upload_id: uploads[1], filename: "kitchen.jpg", error: "HTTP 403 AccessDenied" }],
        },
      });
      expect(await outbox(t.agencyId, "media.delivery.failed")).toEqual([]);
    },
  );

  it("a transient failure is retried with backoff, and only the files still missing are sent again", async () => {
    const { t, listing, deliveryId } = await setup();
    const kitchen = `/${BUCKET}/media/${listing.listing_number}/photo/kitchen.jpg`;
    answers[kitchen] = 503;
    const first = await runJob({ kind: "delivery", delivery_id: deliveryId });
    expect(first.explicitAcks).toEqual([]);
    expect(first.retryMessages).toEqual([{ msgId: "m1" }]);
    expect(first.retryDelays).toEqual([30]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "delivering", attempts: 1 });
    expect(await outbox(t.agencyId)).toSatisfy(
      (events: { eventType: string }[]) => !events.some((e) => e.eventType.startsWith("media.")),
    );
    expect(stored).toHaveLength(2);

    answers[kitchen] = "network";
    const second = await runJob({ kind: "delivery", delivery_id: deliveryId }, { attempts: 2 });
    expect(second.retryMessages).toEqual([{ msgId: "m1" }]);
    expect(second.retryDelays).toEqual([60]);
    expect(stored).toHaveLength(2);

    delete answers[kitchen];
    const third = await runJob({ kind: "delivery", delivery_id: deliveryId }, { attempts: 3 });
    expect(third.explicitAcks).toEqual(["m1"]);
    expect(stored.map((s) => decodeURIComponent(new URL(s.url).pathname)).filter((p) => p === kitchen)).toHaveLength(1);
    expect(stored).toHaveLength(3);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: "completed",
      attempts: 3,
      filesDelivered: 3,
      filesFailed: 0,
    });
    const [event] = await outbox(t.agencyId, "media.delivery.completed");
    expect((event!.data as { summary: unknown }).summary).toEqual({
      files_total: 3,
      files_delivered: 3,
      files_failed: 0,
      failed: [],
    });
  });

  it("total failure: after every attempt failed, media.delivery.failed and no completed event", async () => {
    const { t, listing, deliveryId } = await setup();
    for (const name of ["photo/front.jpg", "photo/kitchen.jpg", "floorplan/plan.pdf"])
      answers[`/${BUCKET}/media/${listing.listing_number}/${name}`] = 500;
    for (let attempt = 1; attempt < MAX_DELIVERY_ATTEMPTS; attempt++) {
      const r = await runJob({ kind: "delivery", delivery_id: deliveryId }, { attempts: attempt });
      expect(r.retryMessages, `attempt ${attempt}`).toHaveLength(1);
      expect(r.retryDelays, `attempt ${attempt}`).toEqual([30 * 2 ** (attempt - 1)]);
    }
    const last = await runJob({ kind: "delivery", delivery_id: deliveryId }, { attempts: MAX_DELIVERY_ATTEMPTS });
    expect(last.explicitAcks).toEqual(["m1"]);
    expect(stored).toEqual([]);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: "failed",
      attempts: MAX_DELIVERY_ATTEMPTS,
      filesDelivered: 0,
      filesFailed: 3,
      error: "HTTP 500 InternalError",
    });
    const events = await outbox(t.agencyId, "media.delivery.failed");
    expect(events).toHaveLength(1);
    expect(events[0]!.data).toEqual({
      delivery_id: deliveryId,
      listing_number: listing.listing_number,
      attempts: MAX_DELIVERY_ATTEMPTS,
      error: "HTTP 500 InternalError",
    });
    expect(await outbox(t.agencyId, "media.delivery.completed")).toEqual([]);
  });

  it("total failure without waiting when nothing is retryable (every file refused)", async () => {
    const { t, listing, deliveryId } = await setup([{ name: "a.jpg", size: 10 }]);
    answers[`/${BUCKET}/media/${listing.listing_number}/photo/a.jpg`] = 403;
    const r = await runJob({ kind: "delivery", delivery_id: deliveryId });
    expect(r.explicitAcks).toEqual(["m1"]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "failed", attempts: 1 });
    expect(await outbox(t.agencyId, "media.delivery.failed")).toHaveLength(1);
  });

  it("a destination removed before the job runs fails the delivery with nothing uploaded", async () => {
    const { t, deliveryId } = await setup([{ name: "a.jpg", size: 10 }]);
    const del = await internal(`/internal/v1/users/${t.agent.id}/delivery-destination`, { method: "DELETE" });
    expect(del.status, del.text).toBe(204);
    await runJob({ kind: "delivery", delivery_id: deliveryId });
    expect(stored).toEqual([]);
    const [event] = await outbox(t.agencyId, "media.delivery.failed");
    expect((event!.data as { error: string }).error).toMatch(/no delivery destination/);
  });

  it("a job for a delivery not written yet waits while young, and is dropped when old", async () => {
    const young = await runJob({ kind: "delivery", delivery_id: "dlv_missing" });
    expect(young.retryMessages).toHaveLength(1);
    const old = await runJob(
      { kind: "delivery", delivery_id: "dlv_missing" },
      { timestamp: new Date(Date.now() - 10 * 60_000) },
    );
    expect(old.explicitAcks).toEqual(["m1"]);
  });
});

describe("uploads settled by the queue (pre-signed R2 PUTs)", () => {
  async function announce(t: Tenant, listingNumber: string, size = 32) {
    const r = await call("/api/v1/media/upload", {
      key: t.key,
      body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: size, listing_number: listingNumber },
    });
    expect(r.status, r.text).toBe(201);
    return (await db().select().from(mediaUploads).where(eq(mediaUploads.id, r.json.upload_id)).get())!;
  }

  it("each upload schedules a settle job due after its URL lapses", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const u = await announce(t, listing.listing_number);
    const settle = sent.find((s) => s.body.kind === "upload.settle");
    expect(settle?.body).toEqual({
      kind: "upload.settle",
      upload_id: u.id,
      traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/),
    });
    expect(settle!.delaySeconds).toBeGreaterThan(15 * 60);
  });

  it("an R2 object-create notification completes the upload and triggers the delivery", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    await configure(t);
    const u = await announce(t, listing.listing_number);
    const object = (await env.UPLOADS.put(u.objectKey, bytesOf(3, 32)))!;
    const r = await runJob({
      account: "acc",
      bucket: "alms-uploads-local",
      action: "PutObject",
      object: { key: u.objectKey, size: 32, eTag: object.etag },
      eventTime: new Date().toISOString(),
    });
    expect(r.explicitAcks).toEqual(["m1"]);
    expect((await db().select().from(mediaUploads).where(eq(mediaUploads.id, u.id)).get())?.status).toBe("completed");
    expect(deliveryJobs()).toHaveLength(1);
  });

  it("completion accepts one object: one written over it later is never delivered", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    await configure(t);
    const u = await announce(t, listing.listing_number);
    const first = (await env.UPLOADS.put(u.objectKey, bytesOf(5, 32)))!;
    const notify = (eTag: string) =>
      runJob({
        account: "acc",
        bucket: "alms-uploads-local",
        action: "PutObject",
        object: { key: u.objectKey, size: 32, eTag },
        eventTime: new Date().toISOString(),
      });
    await notify(first.etag);
    const row = await db().select().from(mediaUploads).where(eq(mediaUploads.id, u.id)).get();
    expect(row).toMatchObject({ status: "completed", objectEtag: first.etag });
    // Another object of the same size lands at the key (R2 refuses it; this stands for a write that got through).
    const second = (await env.UPLOADS.put(u.objectKey, bytesOf(9, 32)))!;
    await notify(second.etag);
    expect((await db().select().from(mediaUploads).where(eq(mediaUploads.id, u.id)).get())?.objectEtag).toBe(
      first.etag,
    );
    const [job] = deliveryJobs();
    expect(deliveryJobs()).toHaveLength(1);
    await runJob(job);
    expect(stored).toEqual([]);
    const [failed] = await outbox(t.agencyId, "media.delivery.failed");
    expect(failed?.data).toMatchObject({ error: "the uploaded file was replaced after its upload completed" });
  });

  it(
    "the settle job completes an upload whose bytes arrived unreported, and expires one whose " + "bytes never came",
    async () => {
      const t = await makeTenant();
      const listing = await makeListing(t);
      await configure(t);
      const arrived = await announce(t, listing.listing_number);
      const abandoned = await announce(t, listing.listing_number);
      await env.UPLOADS.put(arrived.objectKey, bytesOf(4, 32));
      await runJob({ kind: "upload.settle", upload_id: arrived.id });
      expect((await db().select().from(mediaUploads).where(eq(mediaUploads.id, arrived.id)).get())?.status).toBe(
        "completed",
      );
      // The other upload's URL is still valid: the listing's delivery waits for it.
      expect(deliveryJobs()).toEqual([]);
      await runJob({ kind: "upload.settle", upload_id: abandoned.id });
      expect((await db().select().from(mediaUploads).where(eq(mediaUploads.id, abandoned.id)).get())?.status).toBe(
        "expired",
      );
      const [job] = deliveryJobs();
      expect(await deliveryRow(job!.delivery_id)).toMatchObject({ filesTotal: 1 });
    },
  );
});

describe("the internal surface", () => {
  it("stores the storage secret encrypted and never answers it", async () => {
    const t = await makeTenant();
    const answered = await configure(t);
    expect(JSON.stringify(answered)).not.toContain(SECRET);
    expect(answered).toMatchObject({
      endpoint_url: ENDPOINT,
      bucket: BUCKET,
      region: "us-east-1",
      access_key_id: "AKIDAGENT",
      path_prefix: "media",
      addressing_style: "path",
    });
    const row = await db().select().from(deliveryDestinations).where(eq(deliveryDestinations.userId, t.agent.id)).get();
    expect(row!.secretAccessKeySealed).toMatch(/^v2\./);
    expect(row!.secretAccessKeySealed).not.toContain(SECRET);
    const read = await internal(`/internal/v1/users/${t.agent.id}/delivery-destination`);
    expect(read.status, read.text).toBe(200);
    expect(read.text).not.toContain(SECRET);
  });

  it("refuses a plain-http endpoint where http receivers are not allowed", async () => {
    const t = await makeTenant();
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`https://api.test/internal/v1/users/${t.agent.id}/delivery-destination`, {
        method: "PUT",
        headers: { Authorization: "Bearer test-operator-token", "Content-Type": "application/json" },
        body: JSON.stringify({
          endpoint_url: "http://minio.internal:9000",
          bucket: BUCKET,
          region: "us-east-1",
          access_key_id: "a",
          secret_access_key: "b",
        }),
      }),
      { ...env, ALLOW_HTTP_RECEIVERS: "false" } as Env,
      ctx,
    );
    const text = await res.text();
    expect(res.status, text).toBe(422);
    expect(JSON.parse(text).error.code).toBe("invalid_delivery_destination");
  });

  it("re-triggers a delivery of every completed upload, which the job then carries", async () => {
    const { t, listing, deliveryId } = await setup([
      { name: "a.jpg", size: 10 },
      { name: "b.jpg", size: 20 },
    ]);
    await runJob({ kind: "delivery", delivery_id: deliveryId });
    stored = [];
    const r = await internal(
      `/internal/v1/agencies/${t.agencyId}/listings/${listing.listing_number}/media/deliveries`,
      { method: "POST", body: {} },
    );
    expect(r.status, r.text).toBe(202);
    expect(r.json).toMatchObject({ status: "queued", trigger: "manual", files_total: 2 });
    const jobs = deliveryJobs();
    expect(jobs.at(-1)?.delivery_id).toBe(r.json.id);
    await runJob({ kind: "delivery", delivery_id: r.json.id });
    expect(stored).toHaveLength(2);
    expect(await outbox(t.agencyId, "media.delivery.completed")).toHaveLength(2);

    // Everything is delivered, so "undelivered" has nothing left to send.
    expectError(
      await internal(`/internal/v1/agencies/${t.agencyId}/listings/${listing.listing_number}/media/deliveries`, {
        method: "POST",
        body: { scope: "undelivered" },
      }),
      409,
      "nothing_to_deliver",
    );
  });

  it(
    "re-trigger refusals: no destination, nothing uploaded, another agency's listing, the queue " + "refusing",
    async () => {
      const t = await makeTenant();
      const listing = await makeListing(t);
      const path = `/internal/v1/agencies/${t.agencyId}/listings/${listing.listing_number}/media/deliveries`;
      expectError(await internal(path, { method: "POST", body: {} }), 404, "delivery_destination_not_found");
      await configure(t);
      expectError(await internal(path, { method: "POST", body: {} }), 409, "nothing_to_deliver");
      const other = await makeTenant();
      expectError(
        await internal(`/internal/v1/agencies/${other.agencyId}/listings/${listing.listing_number}/media/deliveries`, {
          method: "POST",
          body: {},
        }),
        404,
        "listing_not_found",
      );

      await upload(t, listing.listing_number, [{ name: "a.jpg", size: 10 }]);
      const before = await db().select().from(mediaDeliveries).where(eq(mediaDeliveries.agencyId, t.agencyId)).all();
      vi.mocked(env.MEDIA_QUEUE.send).mockRejectedValueOnce(new Error("queue down"));
      const logs = captureErrorLogs();
      const r = await internal(path, { method: "POST", body: {} });
      expectError(r, 503, "queue_unavailable");
      expect(logs).toEqual([queueDown]);
      expect(r.headers.get("Retry-After")).toBeTruthy();
      expect(
        await db().select().from(mediaDeliveries).where(eq(mediaDeliveries.agencyId, t.agencyId)).all(),
      ).toHaveLength(before.length);
    },
  );

  it("lists a listing's media with every delivery and its own files, however many deliveries there are", async () => {
    const { t, listing, uploads, deliveryId } = await setup();
    const first = await deliveryRow(deliveryId);
    // More deliveries than D1 binds parameters in one statement.
    const extra = Array.from({ length: 120 }, (_, i) => `dlv_many_${deliveryId}_${i.toString().padStart(3, "0")}`);
    const d = db();
    const rows = extra.flatMap((id, i) => [
      d.insert(mediaDeliveries).values({
        id,
        agencyId: t.agencyId,
        listingId: first!.listingId,
        destinationUserId: t.agent.id,
        trigger: "manual",
        createdAt: new Date(Date.UTC(2020, 0, 1, 0, 0, i)).toISOString(),
      }),
      d.insert(mediaDeliveryFiles).values({ deliveryId: id, uploadId: uploads[i % uploads.length]! }),
    ]);
    await d.batch([rows[0]!, ...rows.slice(1)]);

    const media = await internal(`/internal/v1/agencies/${t.agencyId}/listings/${listing.listing_number}/media`);
    expect(media.status, media.text).toBe(200);
    const listed = media.json.deliveries as { id: string; files: { upload_id: string }[] }[];
    expect(listed.map((x) => x.id)).toEqual([deliveryId, ...[...extra].reverse()]);
    expect(listed[0]!.files.map((f) => f.upload_id).sort()).toEqual([...uploads].sort());
    for (const [i, id] of extra.entries()) {
      expect(listed.find((x) => x.id === id)?.files.map((f) => f.upload_id)).toEqual([uploads[i % uploads.length]]);
    }
  });

  it("another agency's path does not show a listing's media", async () => {
    const { listing } = await setup([{ name: "a.jpg", size: 10 }]);
    const other = await makeTenant();
    expectError(
      await internal(`/internal/v1/agencies/${other.agencyId}/listings/${listing.listing_number}/media`),
      404,
      "listing_not_found",
    );
  });
});

async function runBatch(queue: string, bodies: unknown[]) {
  const batch = createMessageBatch(
    queue,
    bodies.map((body, i) => ({ id: `m${i + 1}`, timestamp: new Date(), attempts: 1, body })),
  );
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  return getQueueResult(batch, ctx);
}

async function everyMinute(at = Date.now()) {
  const ctx = createExecutionContext();
  await worker.scheduled(createScheduledController({ cron: "* * * * *", scheduledTime: at }), env, ctx);
  await waitOnExecutionContext(ctx);
}

const ago = (ms: number) => new Date(Date.now() - ms).toISOString();

describe("bounded, resumable and idempotent background work", () => {
  it(
    "the same delivery message twice in a batch, and once more later, copies each file once and " + "emits one event",
    async () => {
      const { t, deliveryId } = await setup();
      const job = { kind: "delivery", delivery_id: deliveryId };
      const first = await runBatch("alms-media-local", [job, job]);
      expect(first.explicitAcks.sort()).toEqual(["m1", "m2"]);
      await runBatch("alms-media-local", [job]);
      expect(stored).toHaveLength(3);
      expect(new Set(stored.map((s) => s.url)).size).toBe(3);
      expect(await outbox(t.agencyId, "media.delivery.completed")).toHaveLength(1);
    },
  );

  it("a delivery larger than one run continues in a fresh job, a few files at a time, each copied once", async () => {
    const t = await makeTenant();
    // More uploads than the per-minute budget allows by default.
    await db()
      .update(apiKeys)
      .set({ rateLimitOverrides: { upload_media: 100 } })
      .where(eq(apiKeys.id, t.keyId));
    await keyGate(env, t.keyId).reload();
    const listing = await makeListing(t);
    await configure(t);
    const files = Array.from({ length: FILES_PER_RUN + 1 }, (_, i) => ({ name: `f${i}.jpg`, size: 8 }));
    await upload(t, listing.listing_number, files);
    const deliveryId = deliveryJobs()[0]!.delivery_id;
    let inFlight = 0;
    let widest = 0;
    const put = vi.mocked(globalThis.fetch).getMockImplementation()!;
    vi.mocked(globalThis.fetch).mockImplementation(async (input, init) => {
      widest = Math.max(widest, ++inFlight);
      try {
        await new Promise((r) => setTimeout(r, 5));
        return await put(input, init);
      } finally {
        inFlight--;
      }
    });
    sent = [];
    const first = await runJob({ kind: "delivery", delivery_id: deliveryId });
    expect(first.explicitAcks).toEqual(["m1"]);
    expect(stored).toHaveLength(FILES_PER_RUN);
    expect(widest).toBeLessThanOrEqual(PARALLEL_PUTS);
    // The continuation is a fresh message: it spends none of the queue's retries, and no attempt.
    expect(sent.map((s) => s.body)).toEqual([
      {
        kind: "delivery",
        delivery_id: deliveryId,
      },
    ]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "delivering", attempts: 0 });
    await runJob(sent[0]!.body);
    expect(stored).toHaveLength(FILES_PER_RUN + 1);
    expect(new Set(stored.map((s) => s.url)).size).toBe(FILES_PER_RUN + 1);
    expect(await deliveryRow(deliveryId)).toMatchObject({
      status: "completed",
      attempts: 1,
      filesDelivered: FILES_PER_RUN + 1,
    });
    expect(await outbox(t.agencyId, "media.delivery.completed")).toHaveLength(1);
  });

  it(
    "a dead-lettered delivery job fails the delivery with one media.delivery.failed, even when " + "delivered twice",
    async () => {
      const { t, listing, deliveryId } = await setup();
      const job = { kind: "delivery", delivery_id: deliveryId };
      const first = await runBatch("alms-media-dlq-local", [job, job]);
      expect(first.explicitAcks.sort()).toEqual(["m1", "m2"]);
      const again = await runBatch("alms-media-dlq-local", [job]);
      expect(again.explicitAcks).toEqual(["m1"]);
      expect(stored).toEqual([]);
      const reason = "delivery abandoned: its job failed on every retry";
      expect(await deliveryRow(deliveryId)).toMatchObject({ status: "failed", filesFailed: 3, error: reason });
      const files = await db().select().from(mediaDeliveryFiles).where(eq(mediaDeliveryFiles.deliveryId, deliveryId));
      expect(files.map((f) => [f.status, f.error])).toEqual(Array(3).fill(["failed", reason]));
      const events = await outbox(t.agencyId, "media.delivery.failed");
      expect(events.map((e) => e.data)).toEqual([
        { delivery_id: deliveryId, listing_number: listing.listing_number, attempts: 1, error: reason },
      ]);
      expect(await outbox(t.agencyId, "media.delivery.completed")).toEqual([]);
    },
  );

  it(
    "a delivery with no progress for 30 minutes is sent again once; with its attempts spent it is " + "ended once",
    async () => {
      const { t, deliveryId } = await setup();
      const stale = ago(STUCK_DELIVERY_MS + 60_000);
      await db().update(mediaDeliveries).set({ updatedAt: stale }).where(eq(mediaDeliveries.id, deliveryId));
      sent = [];
      await everyMinute();
      await everyMinute();
      expect(sent.map((s) => s.body)).toEqual([
        {
          kind: "delivery",
          delivery_id: deliveryId,
          traceparent: expect.stringMatching(/^00-[0-9a-f]{32}-[0-9a-f]{16}-0[01]$/),
        },
      ]);
      expect(await deliveryRow(deliveryId)).toMatchObject({ status: "queued", attempts: 1 });

      await db()
        .update(mediaDeliveries)
        .set({ attempts: MAX_DELIVERY_ATTEMPTS - 1, updatedAt: stale })
        .where(eq(mediaDeliveries.id, deliveryId));
      await everyMinute();
      await everyMinute();
      expect(sent).toHaveLength(1);
      expect(await deliveryRow(deliveryId)).toMatchObject({
        status: "failed",
        error: "delivery abandoned: no progress for 30 minutes",
      });
      expect(await outbox(t.agencyId, "media.delivery.failed")).toHaveLength(1);
      expect(stored).toEqual([]);
    },
  );

  it("a delivery making progress is left alone by the sweep", async () => {
    const { deliveryId } = await setup();
    await db()
      .update(mediaDeliveries)
      .set({ updatedAt: ago(STUCK_DELIVERY_MS - 60_000) })
      .where(eq(mediaDeliveries.id, deliveryId));
    sent = [];
    await everyMinute();
    expect(sent).toEqual([]);
    expect(await deliveryRow(deliveryId)).toMatchObject({ status: "queued", attempts: 0 });
  });

  it("a call to the uploads bucket that does not answer fails within its timeout", async () => {
    await expect(r2Call("get", new Promise(() => {}), 20)).rejects.toThrow("R2 get did not answer within 0.02 s");
    await expect(r2Call("get", Promise.resolve("ok"), 20)).resolves.toBe("ok");
  });
});
