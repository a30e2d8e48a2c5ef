import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import type { MediaJob } from "../../src/media/jobs";
import { ASSET_POLICIES, MULTIPART_THRESHOLD_BYTES } from "../../src/media/policy";
import {
  BASE,
  call,
  direct,
  expectError,
  makeListing,
  makeTenant,
  mockFetch,
  outbox,
  type Tenant,
} from "../support/harness";
import { configureDestination } from "../support/media-fixtures";
import { drain, streamingBucket } from "../support/streaming-bucket";

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
const ENDPOINT = "https://s3.multipart.test";
const UPLOAD = "/api/v1/media/upload";
const uploadPath = (id: string) => `/api/v1/media/uploads/${id}`;

interface Multipart {
  upload_id: string;
  url: string | null;
  headers: Record<string, string> | null;
  expires_at: string;
  multipart: { part_size_bytes: number; part_count: number; last_part_bytes: number } | null;
}
interface PartUrl {
  part_number: number;
  url: string;
  headers: Record<string, string>;
  size_bytes: number;
}

let sent: MediaJob[];
/** Bytes the agent's storage received, per object path. */
let delivered: Map<string, number>;

beforeEach(() => {
  sent = [];
  delivered = new Map();
  vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body: unknown) => {
    sent.push(body as MediaJob);
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } } as unknown as QueueSendResponse;
  });
  // The agent's storage reads each PUT to its end a chunk at a time, holding none of it.
  mockFetch(async (req) => {
    const url = new URL(req.url);
    if (url.origin !== ENDPOINT) throw new Error(`unexpected outbound fetch to ${req.url}`);
    delivered.set(url.pathname, await drain(req.body!));
    return new Response(null, { status: 200, headers: { ETag: '"x"' } });
  });
});
afterEach(() => vi.restoreAllMocks());

type Bindings = Partial<Env>;

/** Calls the public API with `bindings` laid over the Worker's env (the uploads bucket replaced). */
async function callWith(bindings: Bindings, path: string, key: string, body?: unknown, idempotencyKey?: string) {
  const headers = new Headers({ "X-API-Key": key });
  if (body !== undefined) {
    headers.set("Content-Type", "application/json");
    headers.set("X-Idempotency-Key", idempotencyKey ?? crypto.randomUUID());
  }
  const req = new Request(`${BASE}${path}`, {
    method: body === undefined ? "GET" : "POST",
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return direct(req, bindings);
}

async function announce(t: Tenant, size: number, listingNumber?: string, bindings: Bindings = {}) {
  const r = await callWith(bindings, UPLOAD, t.key, {
    asset_type: "video",
    content_type: "video/mp4",
    size_bytes: size,
    listing_number: listingNumber,
    filename: "walkthrough.mp4",
  });
  expect(r.status, r.text).toBe(201);
  return r.json as Multipart;
}

async function partUrls(t: Tenant, id: string, numbers: number[]) {
  const r = await call(`${uploadPath(id)}/part-urls?part_numbers=${numbers.join(",")}`, { key: t.key });
  expect(r.status, r.text).toBe(200);
  return r.json.parts as PartUrl[];
}

async function storedParts(t: Tenant, id: string) {
  const r = await call(`${uploadPath(id)}/parts`, { key: t.key });
  expect(r.status, r.text).toBe(200);
  return r.json as {
    parts: { part_number: number; size_bytes: number; etag: string }[];
    missing_part_numbers: number[];
  };
}

/** The byte every position of part `n` holds, so that the joined file shows each part in its place. */
const fillOf = (n: number) => (n * 37) % 251;

/**
 * Part `n`'s bytes, made as they are read, 4 MiB at a time: no part is ever held in memory
 * whole. With `size`, the stream carries that many bytes whatever the URL signed.
 */
function partStream(n: number, size: number): ReadableStream<Uint8Array> {
  let left = size;
  const source = new ReadableStream<Uint8Array>({
    pull(ctrl) {
      if (left === 0) return ctrl.close();
      const len = Math.min(4 * MiB, left);
      left -= len;
      ctrl.enqueue(new Uint8Array(len).fill(fillOf(n)));
    },
  });
  return source;
}

/** Part `n`'s first `sent` bytes, then the connection drops: the stream fails before the part is whole. */
function cutStream(n: number, sent: number): ReadableStream<Uint8Array> {
  let left = sent;
  const source = new ReadableStream<Uint8Array>({
    pull(ctrl) {
      if (left === 0) return ctrl.error(new Error("connection dropped"));
      const len = Math.min(4 * MiB, left);
      left -= len;
      ctrl.enqueue(new Uint8Array(len).fill(fillOf(n)));
    },
  });
  return source;
}

/** PUTs a part to its signed URL the way a client would: the URL's headers, no API key. */
async function putPart(part: PartUrl, body: BodyInit, bindings: Bindings, headers = part.headers) {
  const res = await worker.fetch(
    new Request(part.url, { method: "PUT", headers, body }),
    { ...env, ...bindings },
    createExecutionContext(),
  );
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined, headers: res.headers };
}

async function runJob(body: MediaJob, bindings: Bindings) {
  const batch = createMessageBatch("alms-media-local", [{ id: "m1", timestamp: new Date(), attempts: 1, body }]);
  const ctx = createExecutionContext();
  await worker.queue(batch, { ...env, ...bindings }, ctx);
  return getQueueResult(batch, ctx);
}

const complete = (
  b: Bindings,
  t: Tenant,
  id: string,
  parts: { part_number: number; etag: string }[],
  idempotencyKey?: string,
) => callWith(b, `${uploadPath(id)}/complete`, t.key, { parts }, idempotencyKey);

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i);
const deliveryJobs = () => sent.filter((j) => j.kind === "delivery");

describe("the upload answer", () => {
  it("describes a multipart upload above the threshold, and a single PUT up to it", async () => {
    const t = await makeTenant();
    const single = await announce(t, MULTIPART_THRESHOLD_BYTES);
    expect(single.multipart, JSON.stringify(single)).toBeNull();
    expect(single.url).toMatch(/\/uploads\/upl_/);
    expect(single.headers?.["Content-Length"]).toBe(String(MULTIPART_THRESHOLD_BYTES));

    const size = MULTIPART_THRESHOLD_BYTES + 1;
    const parts = await announce(t, size);
    expect(parts.url, JSON.stringify(parts)).toBeNull();
    expect(parts.headers).toBeNull();
    expect(parts.multipart).toEqual({ part_size_bytes: 64 * MiB, part_count: 2, last_part_bytes: size - 64 * MiB });
    // A file in parts stays open for 11 hours, not the 15 minutes of one PUT.
    const open = new Date(parts.expires_at).getTime() - Date.now();
    expect(open).toBeGreaterThan(10.9 * 3600_000);
    expect(open).toBeLessThanOrEqual(11 * 3600_000);
  });

  it("takes a video of 50 GiB in equal parts, and refuses a byte more", async () => {
    const t = await makeTenant();
    expect(ASSET_POLICIES.video.maxBytes).toBe(50 * GiB);
    const a = await announce(t, 50 * GiB);
    expect(a.multipart).toEqual({ part_size_bytes: 64 * MiB, part_count: 800, last_part_bytes: 64 * MiB });
    const r = await call(UPLOAD, {
      key: t.key,
      body: { asset_type: "video", content_type: "video/mp4", size_bytes: 50 * GiB + 1 },
    });
    expectError(r, 422, "file_too_large");
  });

  it("a file sent in one PUT has no parts", async () => {
    const t = await makeTenant();
    const a = await announce(t, 10 * MiB);
    expectError(await call(`${uploadPath(a.upload_id)}/parts`, { key: t.key }), 409, "upload_not_multipart");
    expectError(await call(`${uploadPath(a.upload_id)}/abort`, { key: t.key, body: {} }), 409, "upload_not_multipart");
  });

  it("signs only part numbers the upload has", async () => {
    const t = await makeTenant();
    const a = await announce(t, MULTIPART_THRESHOLD_BYTES + 1);
    const r = await call(`${uploadPath(a.upload_id)}/part-urls?part_numbers=1,3`, { key: t.key });
    expectError(r, 422, "upload_part_out_of_range");
    expect(r.json.error.details, r.text).toMatchObject({ part_numbers: [3], part_count: 2 });
    const [one, two] = await partUrls(t, a.upload_id, [1, 2]);
    expect(one!.size_bytes).toBe(64 * MiB);
    expect(one!.headers).toEqual({ "Content-Type": "video/mp4", "Content-Length": String(64 * MiB) });
    expect(two!.size_bytes).toBe(MULTIPART_THRESHOLD_BYTES + 1 - 64 * MiB);
    expect(one!.url).toMatch(new RegExp(`/uploads/${a.upload_id}/parts/1\\?expires=\\d+&sig=`));
  });

  it("another agency's upload is 404 on every multipart route", async () => {
    const [a, other] = [await makeTenant(), await makeTenant()];
    const up = await announce(a, MULTIPART_THRESHOLD_BYTES + 1);
    const path = uploadPath(up.upload_id);
    expectError(await call(`${path}/parts`, { key: other.key }), 404, "upload_not_found");
    expectError(await call(`${path}/part-urls?part_numbers=1`, { key: other.key }), 404, "upload_not_found");
    expectError(
      await call(`${path}/complete`, { key: other.key, body: { parts: [{ part_number: 1, etag: "x" }] } }),
      404,
      "upload_not_found",
    );
    expectError(await call(`${path}/abort`, { key: other.key, body: {} }), 404, "upload_not_found");
  });
});

describe("a 6 GiB video in parts through the service's own upload path", () => {
  it("is interrupted, resumes from the listed parts, completes, and is delivered with its events once", async () => {
    const t = await makeTenant();
    await configureDestination(t, ENDPOINT);
    const listing = await makeListing(t, { activate: true });
    const store = streamingBucket(env.UPLOADS, fillOf);
    const b = { UPLOADS: store.bucket };
    const size = 6 * GiB;

    const a = await announce(t, size, listing.listing_number, b);
    expect(a.multipart).toEqual({ part_size_bytes: 64 * MiB, part_count: 96, last_part_bytes: 64 * MiB });
    const id = a.upload_id;

    // The first session sends 40 parts; the 41st is cut off after 24 MiB.
    const first = await partUrls(t, id, range(1, 41));
    for (const part of first.slice(0, 40)) {
      const r = await putPart(part, partStream(part.part_number, part.size_bytes), b);
      expect(r.status, r.text).toBe(200);
      expect(r.json.etag, r.text).toBe(r.headers.get("etag")?.replace(/"/g, ""));
    }
    const cut = await putPart(first[40]!, cutStream(41, 24 * MiB), b);
    expectError(cut, 400, "upload_size_mismatch");
    expect(store.stats.partsFailed).toBe(1);

    // The client comes back: the listed parts say where to resume.
    const listed = await storedParts(t, id);
    expect(listed.parts.map((p) => p.part_number)).toEqual(range(1, 40));
    expect(listed.parts.every((p) => p.size_bytes === 64 * MiB)).toBe(true);
    expect(listed.missing_part_numbers).toEqual(range(41, 96));
    const partial = listed.parts.map((p) => ({ part_number: p.part_number, etag: p.etag }));
    expectError(await complete(b, t, id, partial), 409, "upload_parts_incomplete");

    // A used part URL stores nothing more.
    const again = await putPart(first[0]!, partStream(1, 64 * MiB), b);
    expectError(again, 409, "upload_part_already_stored");

    for (const batch of [range(41, 90), range(91, 96)]) {
      for (const part of await partUrls(t, id, batch)) {
        const r = await putPart(part, partStream(part.part_number, part.size_bytes), b);
        expect(r.status, r.text).toBe(200);
      }
    }
    const all = await storedParts(t, id);
    expect(all.missing_part_numbers).toEqual([]);
    expect([...store.received.values()].reduce((sum, n) => sum + n, 0)).toBe(size);
    expect(store.stats.partsStored).toBe(96);

    const parts = all.parts.map((p) => ({ part_number: p.part_number, etag: p.etag }));
    const wrong = parts.map((p, i) => (i === 7 ? { ...p, etag: "not-its-etag" } : p));
    const refused = await complete(b, t, id, wrong);
    expectError(refused, 409, "upload_parts_incomplete");
    expect(refused.json.error.details, refused.text).toEqual({ unmatched_part_numbers: [8] });

    const key = crypto.randomUUID();
    const done = await complete(b, t, id, parts, key);
    expect(done.status, done.text).toBe(200);
    expect(done.json).toMatchObject({ upload_id: id, status: "uploading", size_bytes: size, stored_bytes: size });
    expect(deliveryJobs()).toHaveLength(1);
    // A replay, and a second completion under another key, change nothing and queue nothing.
    const replay = await complete(b, t, id, parts, key);
    expect(replay.headers.get("x-idempotent-replay"), replay.text).toBe("true");
    const twice = await complete(b, t, id, parts);
    expect(twice.status, twice.text).toBe(200);
    expect(store.stats.completions).toBe(1);
    expect(deliveryJobs()).toHaveLength(1);
    expectError(await callWith(b, `${uploadPath(id)}/abort`, t.key, {}), 409, "upload_already_completed");

    // The delivery copies the joined 6 GiB file to the agent's storage, once, and says so once.
    await runJob(deliveryJobs()[0]!, b);
    expect([...delivered.values()]).toEqual([size]);
    expect(store.stats.bytesRead).toBe(size);
    expect(await outbox(t.agencyId, "media.delivery.completed")).toHaveLength(1);
    expect(await outbox(t.agencyId, "media.delivery.failed")).toHaveLength(0);
    const status = await call(uploadPath(id), { key: t.key });
    expect(status.json, status.text).toMatchObject({ status: "delivered", stored_bytes: size });
  }, 120_000);
});

describe("parts on the service's own upload path", () => {
  it("refuses a part larger or smaller than signed, stores nothing, and takes the part again", async () => {
    const t = await makeTenant();
    const b = { UPLOADS: streamingBucket(env.UPLOADS, fillOf).bucket };
    const a = await announce(t, MULTIPART_THRESHOLD_BYTES + 1, undefined, b);
    const [one] = await partUrls(t, a.upload_id, [1]);
    const signed = 64 * MiB;
    for (const size of [signed - 1, signed + 1]) {
      // Declared: refused before a byte is read.
      const declared = await putPart(one!, partStream(1, size), b, { ...one!.headers, "Content-Length": String(size) });
      expectError(declared, 400, "upload_size_mismatch");
      expect(declared.json.error.details, declared.text).toMatchObject({ expected_bytes: signed });
      // Streamed under the signed length: the fixed-length stream refuses it as it arrives.
      const source = new ReadableStream<Uint8Array>({
        start(ctrl) {
          ctrl.enqueue(new Uint8Array(size).fill(fillOf(1)));
          ctrl.close();
        },
      });
      expectError(await putPart(one!, source, b), 400, "upload_size_mismatch");
    }
    const listed = await storedParts(t, a.upload_id);
    expect(listed.parts).toEqual([]);
    expect(listed.missing_part_numbers).toEqual([1, 2]);

    const ok = await putPart(one!, partStream(1, signed), b);
    expect(ok.status, ok.text).toBe(200);
    expect(ok.json).toMatchObject({ upload_id: a.upload_id, part_number: 1, size_bytes: signed });
    expectError(await putPart(one!, partStream(1, signed), b), 409, "upload_part_already_stored");
  });

  it("holds parts to the upload's type and to their signature", async () => {
    const t = await makeTenant();
    const b = { UPLOADS: streamingBucket(env.UPLOADS, fillOf).bucket };
    const a = await announce(t, MULTIPART_THRESHOLD_BYTES + 1, undefined, b);
    const [, two] = await partUrls(t, a.upload_id, [1, 2]);
    const size = two!.size_bytes;
    const typed = await putPart(two!, partStream(2, size), b, { ...two!.headers, "Content-Type": "video/webm" });
    expectError(typed, 415, "request_content_type_mismatch");
    const other = { ...two!, url: two!.url.replace("/parts/2?", "/parts/1?") };
    expectError(await putPart(other, partStream(2, size), b), 403, "upload_url_invalid");
    expect((await putPart(two!, partStream(2, size), b)).status).toBe(200);
  });

  it("an aborted upload takes no more parts and no completion; aborting again changes nothing", async () => {
    const t = await makeTenant();
    const b = { UPLOADS: streamingBucket(env.UPLOADS, fillOf).bucket };
    const a = await announce(t, MULTIPART_THRESHOLD_BYTES + 1, undefined, b);
    const [one] = await partUrls(t, a.upload_id, [1]);
    const r = await callWith(b, `${uploadPath(a.upload_id)}/abort`, t.key, {});
    expect(r.status, r.text).toBe(200);
    expect(r.json).toMatchObject({ status: "failed", error: "the upload was aborted" });
    const again = await callWith(b, `${uploadPath(a.upload_id)}/abort`, t.key, {});
    expect(again.status, again.text).toBe(200);
    expectError(await putPart(one!, partStream(1, 64 * MiB), b), 403, "upload_url_expired");
    expectError(await complete(b, t, a.upload_id, [{ part_number: 1, etag: "x" }]), 409, "upload_closed");
    expectError(
      await call(`${uploadPath(a.upload_id)}/part-urls?part_numbers=1`, { key: t.key }),
      409,
      "upload_closed",
    );
  });
});
