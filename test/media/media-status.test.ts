import { createExecutionContext, createMessageBatch, getQueueResult } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { mediaUploads } from "../../src/db/schema";
import worker from "../../src/index";
import type { MediaJob } from "../../src/media/jobs";
import { call, db, expectError, makeListing, makeTenant, mockFetch, type Tenant } from "../support/harness";
import { configureDestination } from "../support/media-fixtures";

const ENDPOINT = "https://s3.status.test";
const uploadPath = (id: string) => `/api/v1/media/uploads/${id}`;
const mediaPath = (listingNumber: string) => `/api/v1/listings/${listingNumber}/media`;

let sent: MediaJob[];
/** The destination's answer to each PUT. */
let answer: number;

beforeEach(() => {
  sent = [];
  answer = 200;
  vi.spyOn(env.MEDIA_QUEUE, "send").mockImplementation(async (body: unknown) => {
    sent.push(body as MediaJob);
    return { metadata: { metrics: { backlogCount: 0, backlogBytes: 0 } } } as unknown as QueueSendResponse;
  });
  mockFetch(async (req) => {
    if (new URL(req.url).origin !== ENDPOINT) throw new Error(`unexpected outbound fetch to ${req.url}`);
    await req.arrayBuffer();
    return answer === 200
      ? new Response(null, { status: 200, headers: { ETag: '"x"' } })
      : new Response("<Error><Code>AccessDenied</Code></Error>", { status: answer });
  });
});
afterEach(() => vi.restoreAllMocks());

const configure = (t: Tenant) => configureDestination(t, ENDPOINT);

async function announce(t: Tenant, listingNumber: string | undefined, size = 1024, filename = "front.jpg") {
  const r = await call("/api/v1/media/upload", {
    key: t.key,
    body: {
      asset_type: "photo",
      content_type: "image/jpeg",
      size_bytes: size,
      listing_number: listingNumber,
      filename,
    },
  });
  expect(r.status, r.text).toBe(201);
  return r.json as { upload_id: string; url: string; headers: Record<string, string>; size_bytes: number };
}

async function putBytes(a: { url: string; headers: Record<string, string>; size_bytes: number }) {
  const res = await worker.fetch(
    new Request(a.url, { method: "PUT", headers: a.headers, body: new Uint8Array(a.size_bytes) }),
    env,
    createExecutionContext(),
  );
  expect(res.status, await res.clone().text()).toBe(200);
}

async function runJob(body: MediaJob) {
  const batch = createMessageBatch("alms-media-local", [{ id: "m1", timestamp: new Date(), attempts: 1, body }]);
  const ctx = createExecutionContext();
  await worker.queue(batch, env, ctx);
  return getQueueResult(batch, ctx);
}

const read = (t: Tenant, id: string) => call(uploadPath(id), { key: t.key });

describe("GET /api/v1/media/uploads/{upload_id}", () => {
  it("follows a file from pending to stored, uploading and delivered, with its sizes", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    await configure(t);
    const a = await announce(t, listing.listing_number, 2048);

    const pending = await read(t, a.upload_id);
    expect(pending.status, pending.text).toBe(200);
    expect(pending.json, pending.text).toMatchObject({
      upload_id: a.upload_id,
      status: "pending",
      asset_type: "photo",
      content_type: "image/jpeg",
      size_bytes: 2048,
      stored_bytes: null,
      filename: "front.jpg",
      listing_number: listing.listing_number,
      error: null,
      delivery: null,
      completed_at: null,
    });

    await putBytes(a);
    const uploading = await read(t, a.upload_id);
    const job = sent.find((j) => j.kind === "delivery") as Extract<MediaJob, { kind: "delivery" }>;
    expect(job, JSON.stringify(sent)).toBeDefined();
    expect(uploading.json, uploading.text).toMatchObject({
      status: "uploading",
      stored_bytes: 2048,
      delivery: { delivery_id: job.delivery_id, status: "queued", file_status: "pending", error: null },
    });
    expect(uploading.json.completed_at, uploading.text).toBeTypeOf("string");

    await runJob(job);
    const delivered = await read(t, a.upload_id);
    expect(delivered.json, delivered.text).toMatchObject({
      status: "delivered",
      delivery: { delivery_id: job.delivery_id, status: "completed", file_status: "delivered" },
    });
    expect(delivered.json.updated_at >= uploading.json.updated_at, delivered.text).toBe(true);
  });

  it("a stored file is `stored` until a delivery carries it: no agent storage, or no listing", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const withListing = await announce(t, listing.listing_number);
    const alone = await announce(t, undefined);
    await putBytes(withListing);
    await putBytes(alone);
    for (const [a, listingNumber] of [
      [withListing, listing.listing_number],
      [alone, null],
    ] as const) {
      const r = await read(t, a.upload_id);
      expect(r.json, r.text).toMatchObject({
        status: "stored",
        stored_bytes: 1024,
        delivery: null,
        listing_number: listingNumber,
      });
    }
  });

  it("a file refused by the storage is `failed` with the storage's error", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    await configure(t);
    const a = await announce(t, listing.listing_number);
    await putBytes(a);
    answer = 403;
    await runJob(sent.find((j) => j.kind === "delivery")!);
    const r = await read(t, a.upload_id);
    expect(r.json, r.text).toMatchObject({
      status: "failed",
      stored_bytes: 1024,
      delivery: { status: "failed", file_status: "failed" },
    });
    expect(r.json.error, r.text).toContain("AccessDenied");
  });

  it("an upload whose bytes never came is `failed`, nothing stored", async () => {
    const t = await makeTenant();
    const a = await announce(t, undefined);
    await db().update(mediaUploads).set({ status: "expired" }).where(eq(mediaUploads.id, a.upload_id));
    const r = await read(t, a.upload_id);
    expect(r.json, r.text).toMatchObject({ status: "failed", stored_bytes: null, delivery: null });
    expect(r.json.error, r.text).toContain("did not arrive");
  });

  it("another agency's upload answers 404 upload_not_found, exactly like an unknown id", async () => {
    const mine = await makeTenant();
    const theirs = await makeTenant();
    const a = await announce(theirs, undefined);
    const other = await read(mine, a.upload_id);
    const unknown = await read(mine, "upl_doesnotexist");
    expectError(other, 404, "upload_not_found");
    expectError(unknown, 404, "upload_not_found");
    expect(other.json.error.message).toBe(unknown.json.error.message);
  });

  it("needs the listings:read scope", async () => {
    const t = await makeTenant({ scopes: ["media:write"] });
    const a = await announce(t, undefined);
    expectError(await read(t, a.upload_id), 403, "auth.scope_denied");
  });
});

describe("GET /api/v1/listings/{listing_number}/media", () => {
  it("pages the listing's uploads oldest first, each as the single read answers it", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const other = await makeListing(t);
    const ids = [];
    for (const name of ["a.jpg", "b.jpg", "c.jpg"])
      ids.push((await announce(t, listing.listing_number, 10, name)).upload_id);
    await announce(t, other.listing_number);

    const first = await call(`${mediaPath(listing.listing_number)}?limit=2`, { key: t.key });
    expect(first.status, first.text).toBe(200);
    expect(
      first.json.data.map((u: { upload_id: string }) => u.upload_id),
      first.text,
    ).toEqual(ids.slice(0, 2));
    expect(first.json.next_cursor, first.text).not.toBe("");
    const second = await call(
      `${mediaPath(listing.listing_number)}?limit=2&cursor=${encodeURIComponent(first.json.next_cursor)}`,
      { key: t.key },
    );
    expect(
      second.json.data.map((u: { upload_id: string }) => u.upload_id),
      second.text,
    ).toEqual(ids.slice(2));
    expect(second.json.next_cursor, second.text).toBe("");

    const single = await read(t, ids[0]!);
    expect(first.json.data[0], first.text).toEqual(single.json);
  });

  it("a cursor of another listing is refused", async () => {
    const t = await makeTenant();
    const one = await makeListing(t);
    const two = await makeListing(t);
    await announce(t, one.listing_number, 10, "a.jpg");
    await announce(t, one.listing_number, 10, "b.jpg");
    const first = await call(`${mediaPath(one.listing_number)}?limit=1`, { key: t.key });
    const r = await call(`${mediaPath(two.listing_number)}?cursor=${encodeURIComponent(first.json.next_cursor)}`, {
      key: t.key,
    });
    expectError(r, 422, "request_query_invalid");
  });

  it("another agency's listing answers 404 listing_not_found, exactly like an unknown number", async () => {
    const mine = await makeTenant();
    const theirs = await makeTenant();
    const listing = await makeListing(theirs);
    await announce(theirs, listing.listing_number);
    expectError(await call(mediaPath(listing.listing_number), { key: mine.key }), 404, "listing_not_found");
    expectError(await call(mediaPath("zzzzzzz"), { key: mine.key }), 404, "listing_not_found");
  });

  it("is a public route, not the 404 endpoint_not_in_scope of unknown listing paths", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    expect((await call(mediaPath(listing.listing_number), { key: t.key })).status).toBe(200);
    expectError(
      await call(`/api/v1/listings/${listing.listing_number}/medias`, { key: t.key }),
      404,
      "endpoint_not_in_scope",
    );
  });
});
