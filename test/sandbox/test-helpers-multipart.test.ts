import { createExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it, vi } from "vitest";
import worker from "../../src/index";
import { MULTIPART_THRESHOLD_BYTES } from "../../src/media/policy";
import { call, expectError, makeListing, makeTenant, type Tenant } from "../support/harness";

const MiB = 1024 * 1024;
const uploadPath = (id: string) => `/api/v1/media/uploads/${id}`;

afterEach(() => vi.restoreAllMocks());

interface PartUrl {
  part_number: number;
  url: string;
  headers: Record<string, string>;
  size_bytes: number;
}

/** A file in parts for a fresh listing, with its signed part URLs and its object key. */
async function announce(t: Tenant) {
  const listing = await makeListing(t);
  const size = MULTIPART_THRESHOLD_BYTES + 1;
  const r = await call("/api/v1/media/upload", {
    key: t.key,
    body: { asset_type: "video", content_type: "video/mp4", size_bytes: size, listing_number: listing.listing_number },
  });
  expect(r.status, r.text).toBe(201);
  const id = r.json.upload_id as string;
  const urls = await call(`${uploadPath(id)}/part-urls?part_numbers=1,2`, { key: t.key });
  expect(urls.status, urls.text).toBe(200);
  const row = await env.DB.prepare("SELECT object_key, multipart_id FROM media_uploads WHERE id = ?").bind(id).first();
  return {
    id,
    size,
    listingNumber: listing.listing_number,
    parts: urls.json.parts as PartUrl[],
    objectKey: String(row!.object_key),
    multipartId: String(row!.multipart_id),
  };
}

/** Sends a part through the Worker's own part path: every byte is the part number. */
async function sendPart(part: PartUrl) {
  const body = new Uint8Array(part.size_bytes).fill(part.part_number);
  const req = new Request(part.url, { method: "PUT", headers: part.headers, body });
  const res = await worker.fetch(req, env, createExecutionContext());
  expect(res.status, await res.clone().text()).toBe(200);
  await res.body?.cancel();
}

const completeHelper = (t: Tenant, listingNumber: string) =>
  call(`/api/v1/test_helpers/listings/${listingNumber}/uploads/complete`, { key: t.key, method: "POST" });

describe("the sandbox's uploads/complete and a file in parts", () => {
  it("joins the parts when every one arrived: the stored file is the one sent, not a placeholder", async () => {
    const t = await makeTenant();
    const up = await announce(t);
    for (const part of up.parts) await sendPart(part);
    const r = await completeHelper(t, up.listingNumber);
    expect(r.status, r.text).toBe(200);
    expect(r.json.completed_upload_ids).toEqual([up.id]);
    const object = await env.UPLOADS.get(up.objectKey);
    expect(object?.size).toBe(up.size);
    expect(object?.customMetadata?.sandbox_placeholder).toBeUndefined();
    const bytes = new Uint8Array(await object!.arrayBuffer());
    expect([bytes[0], bytes[64 * MiB - 1], bytes[64 * MiB], bytes[up.size - 1]]).toEqual([1, 1, 2, 2]);
    const status = await call(uploadPath(up.id), { key: t.key });
    expect(status.json, status.text).toMatchObject({ status: "stored", stored_bytes: up.size });
  }, 120_000);

  it("drops the parts when some are missing, and completes with the placeholder", async () => {
    const t = await makeTenant();
    const up = await announce(t);
    await sendPart(up.parts[0]!);
    const r = await completeHelper(t, up.listingNumber);
    expect(r.status, r.text).toBe(200);
    expect(r.json.completed_upload_ids).toEqual([up.id]);
    const object = await env.UPLOADS.head(up.objectKey);
    expect(object?.customMetadata?.sandbox_placeholder).toBe("true");
    // R2 no longer holds the multipart upload: a part sent to it now is refused.
    const mpu = env.UPLOADS.resumeMultipartUpload(up.objectKey, up.multipartId);
    await expect(mpu.uploadPart(2, new Uint8Array(16))).rejects.toThrow();
    expectError(await call(`${uploadPath(up.id)}/parts`, { key: t.key }), 409, "upload_already_completed");
  }, 60_000);
});
