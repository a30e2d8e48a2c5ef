import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import type { MediaJob } from "../../src/media/jobs";
import { MULTIPART_THRESHOLD_BYTES } from "../../src/media/policy";
import { call, expectError, makeListing, makeTenant, mockFetch, outbox, type Tenant } from "../support/harness";
import { configureDestination } from "../support/media-fixtures";
import { drain } from "../support/streaming-bucket";

const MiB = 1024 * 1024;
const ENDPOINT = "https://s3.local-r2.test";
const uploadPath = (id: string) => `/api/v1/media/uploads/${id}`;

interface PartUrl {
  part_number: number;
  url: string;
  headers: Record<string, string>;
  size_bytes: number;
}

let sent: MediaJob[];
let delivered: Map<string, number>;

beforeEach(() => {
  sent = [];
  delivered = new Map();
  vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body: unknown) => {
    sent.push(body as MediaJob);
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } } as unknown as QueueSendResponse;
  });
  mockFetch(async (req) => {
    const url = new URL(req.url);
    if (url.origin !== ENDPOINT) throw new Error(`unexpected outbound fetch to ${req.url}`);
    delivered.set(url.pathname, await drain(req.body!));
    return new Response(null, { status: 200, headers: { ETag: '"x"' } });
  });
});
afterEach(() => vi.restoreAllMocks());

/**
 * The file's bytes: every MiB is one random MiB stamped with its index in its first bytes,
 * so a part stored in another place, or a MiB lost or repeated, changes the file's hash.
 */
function fileOf(size: number) {
  const base = new Uint8Array(MiB);
  for (let at = 0; at < MiB; at += 65_536) crypto.getRandomValues(base.subarray(at, at + 65_536));
  const mib = (k: number) => {
    const chunk = base.slice();
    new DataView(chunk.buffer).setUint32(0, k);
    return chunk;
  };
  /** Bytes [from, to) a MiB at a time, made as they are read. */
  const stream = (from: number, to: number) => {
    let at = from;
    return new ReadableStream<Uint8Array>({
      pull(ctrl) {
        if (at >= to) return ctrl.close();
        const k = Math.floor(at / MiB);
        const end = Math.min(to, (k + 1) * MiB);
        ctrl.enqueue(mib(k).subarray(at - k * MiB, end - k * MiB));
        at = end;
      },
    });
  };
  return { stream, size, sha256: () => sha256(stream(0, size)) };
}

async function sha256(stream: ReadableStream<Uint8Array>) {
  const digest = new crypto.DigestStream("SHA-256");
  await stream.pipeTo(digest);
  return [...new Uint8Array(await digest.digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** PUTs a part to its signed URL as a client does: the URL's headers, no API key, the Worker's real env. */
async function putPart(part: PartUrl, body: ReadableStream<Uint8Array>) {
  const req = new Request(part.url, { method: "PUT", headers: part.headers, body });
  const res = await worker.fetch(req, env, createExecutionContext());
  const text = await res.text();
  return { status: res.status, text, json: text ? JSON.parse(text) : undefined, headers: res.headers };
}

async function partUrls(t: Tenant, id: string, numbers: number[]) {
  const r = await call(`${uploadPath(id)}/part-urls?part_numbers=${numbers.join(",")}`, { key: t.key });
  expect(r.status, r.text).toBe(200);
  return r.json.parts as PartUrl[];
}

describe("a file just above the threshold, in parts through the local R2 itself", () => {
  it("is interrupted, resumes from the listed parts, completes, reads back whole, and is delivered once", async () => {
    const t = await makeTenant();
    await configureDestination(t, ENDPOINT);
    const listing = await makeListing(t, { activate: true });
    const file = fileOf(MULTIPART_THRESHOLD_BYTES + 1);

    const a = await call("/api/v1/media/upload", {
      key: t.key,
      body: {
        asset_type: "video",
        content_type: "video/mp4",
        size_bytes: file.size,
        listing_number: listing.listing_number,
        filename: "walkthrough.mp4",
      },
    });
    expect(a.status, a.text).toBe(201);
    const { upload_id: id, multipart } = a.json;
    expect(multipart).toEqual({ part_size_bytes: 64 * MiB, part_count: 2, last_part_bytes: file.size - 64 * MiB });
    const [one, two] = await partUrls(t, id, [1, 2]);

    const first = await putPart(one!, file.stream(0, 64 * MiB));
    expect(first.status, first.text).toBe(200);
    // The client's first session ends there: its one try at part 2 sent a range cut short
    // (refused before a byte reaches R2), then the connection was gone. A part cut off in
    // mid-stream is refused the same way (the 6 GiB test); the local R2 simulator prints an
    // uncaught error for a stream that breaks, so it is not broken here.
    const cut = await putPart(
      { ...two!, headers: { ...two!.headers, "Content-Length": String(20 * MiB) } },
      file.stream(64 * MiB, 84 * MiB),
    );
    expectError(cut, 400, "upload_size_mismatch");

    const listed = await call(`${uploadPath(id)}/parts`, { key: t.key });
    expect(listed.json, listed.text).toEqual({
      upload_id: id,
      ...multipart,
      parts: [{ part_number: 1, size_bytes: 64 * MiB, etag: first.json.etag }],
      missing_part_numbers: [2],
    });

    // Resuming sends only the missing part, on the same URL (the refused PUT did not use it up).
    const second = await putPart(two!, file.stream(64 * MiB, file.size));
    expect(second.status, second.text).toBe(200);
    const all = await call(`${uploadPath(id)}/parts`, { key: t.key });
    expect(all.json.missing_part_numbers, all.text).toEqual([]);

    const parts = all.json.parts.map((p: { part_number: number; etag: string }) => ({
      part_number: p.part_number,
      etag: p.etag,
    }));
    const done = await call(`${uploadPath(id)}/complete`, { key: t.key, body: { parts } });
    expect(done.status, done.text).toBe(200);
    expect(done.json).toMatchObject({ upload_id: id, stored_bytes: file.size });
    const again = await call(`${uploadPath(id)}/complete`, { key: t.key, body: { parts } });
    expect(again.status, again.text).toBe(200);

    // R2 holds exactly the file that was sent, in its order.
    const [row] = (await env.DB.prepare("SELECT object_key FROM media_uploads WHERE id = ?").bind(id).all()).results;
    const object = await env.UPLOADS.get(String(row!.object_key));
    expect(object?.size).toBe(file.size);
    expect(await sha256(object!.body)).toBe(await file.sha256());

    const jobs = sent.filter((j) => j.kind === "delivery");
    expect(jobs).toHaveLength(1);
    const batch = createMessageBatch("alms-media-local", [
      { id: "m1", timestamp: new Date(), attempts: 1, body: jobs[0]! },
    ]);
    const ctx = createExecutionContext();
    await worker.queue(batch, env, ctx);
    await getQueueResult(batch, ctx);
    expect([...delivered.values()]).toEqual([file.size]);
    expect(await outbox(t.agencyId, "media.delivery.completed")).toHaveLength(1);
    expect(await outbox(t.agencyId, "media.delivery.failed")).toHaveLength(0);
  }, 120_000);
});
