import { createExecutionContext, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { afterEach, describe, expect, it, vi } from "vitest";
import { mediaUploads } from "../../src/db/schema";
import { mintKey } from "../../src/domain/api-keys";
import { createAgency, createUser } from "../../src/domain/people/hierarchy";
import worker from "../../src/index";
import { ASSET_POLICIES, MULTIPART_THRESHOLD_BYTES, R2_SINGLE_PUT_MAX_BYTES } from "../../src/media/policy";
import { presignR2 } from "../../src/media/presign";
import {
  BASE,
  call,
  captureErrorLogs,
  db,
  expectError,
  makeListing,
  makePlatformKey,
  makeTenant,
  sessionFor,
  type Tenant,
  unique,
} from "../support/harness";
import { expectedSignature } from "../support/sigv4";

const UPLOAD = "/api/v1/media/upload";
const photo = { asset_type: "photo", content_type: "image/jpeg", size_bytes: 1024 };
const cookie = (token: string) => ({ Cookie: `alms_session=${token}` });
const uploadsOf = (agencyId: string) =>
  db().select().from(mediaUploads).where(eq(mediaUploads.agencyId, agencyId)).all();

afterEach(() => {
  vi.restoreAllMocks();
});

/** PUTs bytes to a URL the upload answer gave, the way a browser or curl would. */
async function put(
  url: string,
  body: Uint8Array | string | ReadableStream,
  headers: Record<string, string>,
  bindings: Partial<Env> = {},
) {
  const res = await worker.fetch(
    new Request(url, { method: "PUT", headers, body }),
    { ...env, ...bindings },
    createExecutionContext(),
  );
  const text = await res.text();
  return { res, status: res.status, headers: res.headers, text, json: text ? JSON.parse(text) : undefined };
}

/**
 * The bucket, with a streamed body read to its end in this isolate before it goes to R2. A body
 * that fails mid-stream (a FixedLengthStream given the wrong number of bytes) rejects the put here
 * exactly as it would in R2; sent into the local R2 of miniflare, it makes the simulator log
 * uncaught "Network connection lost" errors although every promise of the Worker is handled.
 */
function readingBodiesFirst(bucket: R2Bucket): R2Bucket {
  return new Proxy(bucket, {
    get(target, prop) {
      if (prop === "put") {
        return async (key: string, value: Parameters<R2Bucket["put"]>[1], options?: R2PutOptions) =>
          target.put(key, value instanceof ReadableStream ? await new Response(value).arrayBuffer() : value, options);
      }
      const member = Reflect.get(target, prop);
      return typeof member === "function" ? member.bind(target) : member;
    },
  });
}

describe("allowlists and caps per asset type", () => {
  const cases = Object.entries(ASSET_POLICIES).map(([type, p]) => ({
    type,
    accepted: p.contentTypes,
    max: p.maxBytes,
  }));

  it.each(cases)("$type accepts each listed type up to its cap", async ({ type, accepted, max }) => {
    const t = await makeTenant();
    for (const content_type of accepted) {
      const r = await call(UPLOAD, { key: t.key, body: { asset_type: type, content_type, size_bytes: max } });
      expect(r.status, r.text).toBe(201);
      expect(r.json.content_type, r.text).toBe(content_type);
      expect(r.json.size_bytes, r.text).toBe(max);
    }
  });

  it.each(cases)("$type refuses one byte over its cap with file_too_large", async ({ type, accepted, max }) => {
    const t = await makeTenant();
    const r = await call(UPLOAD, {
      key: t.key,
      body: { asset_type: type, content_type: accepted[0], size_bytes: max + 1 },
    });
    expectError(r, 422, "file_too_large");
    expect(r.json.error.details, r.text).toMatchObject({ asset_type: type, max_bytes: max, size_bytes: max + 1 });
  });

  it("a single PUT stays under R2's single-PUT limit; a larger video goes up in parts", async () => {
    const t = await makeTenant();
    expect(R2_SINGLE_PUT_MAX_BYTES).toBe(5_363_466_240);
    expect(MULTIPART_THRESHOLD_BYTES).toBeLessThan(R2_SINGLE_PUT_MAX_BYTES);
    const video = { asset_type: "video", content_type: "video/mp4" };
    const atThreshold = await call(UPLOAD, { key: t.key, body: { ...video, size_bytes: MULTIPART_THRESHOLD_BYTES } });
    expect(atThreshold.json.headers["Content-Length"], atThreshold.text).toBe(String(MULTIPART_THRESHOLD_BYTES));
    for (const size_bytes of [R2_SINGLE_PUT_MAX_BYTES + 1, 5_366_000_000]) {
      const r = await call(UPLOAD, { key: t.key, body: { ...video, size_bytes } });
      expect(r.status, r.text).toBe(201);
      expect(r.json.url, r.text).toBeNull();
      expect(r.json.multipart.part_count * r.json.multipart.part_size_bytes, r.text).toBeGreaterThanOrEqual(size_bytes);
    }
  });

  it.each([
    ["photo", "image/gif"],
    ["photo", "video/mp4"],
    ["photo", "image/svg+xml"],
    ["video", "image/jpeg"],
    ["video", "video/x-msvideo"],
    ["floorplan", "image/svg+xml"],
    ["floorplan", "image/webp"],
    ["document", "application/msword"],
    ["document", "text/html"],
  ])("%s refuses %s with unsupported_mime_type", async (asset_type, content_type) => {
    const t = await makeTenant();
    const r = await call(UPLOAD, { key: t.key, body: { asset_type, content_type, size_bytes: 10 } });
    expectError(r, 422, "unsupported_mime_type");
    expect(r.json.error.details.allowed_content_types, r.text).toEqual(
      ASSET_POLICIES[asset_type as keyof typeof ASSET_POLICIES].contentTypes,
    );
  });

  it("the media type is compared without case or parameters, and answered normalized", async () => {
    const t = await makeTenant();
    const r = await call(UPLOAD, { key: t.key, body: { ...photo, content_type: "Image/JPEG; q=1" } });
    expect(r.status, r.text).toBe(201);
    expect(r.json.content_type).toBe("image/jpeg");
    expect(r.json.headers["Content-Type"]).toBe("image/jpeg");
  });

  it("an unknown asset type, a zero size and a fractional size are validation errors", async () => {
    const t = await makeTenant();
    expectError(
      await call(UPLOAD, { key: t.key, body: { ...photo, asset_type: "audio" } }),
      422,
      "validation_enum_not_allowed",
    );
    expectError(await call(UPLOAD, { key: t.key, body: { ...photo, size_bytes: 0 } }), 422, "validation_out_of_range");
    expectError(
      await call(UPLOAD, { key: t.key, body: { ...photo, size_bytes: 1.5 } }),
      422,
      "validation_type_mismatch",
    );
    expectError(
      await call(UPLOAD, { key: t.key, body: { ...photo, filename: "../etc/passwd" } }),
      422,
      "validation_string_pattern",
    );
    expectError(await call(UPLOAD, { key: t.key, body: { ...photo, bucket: "x" } }), 422, "validation_unknown_field");
  });
});

describe("the upload answer", () => {
  it("is a PUT destination with its headers, expiry and upload id; the upload is recorded as pending", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const r = await call(UPLOAD, {
      key: t.key,
      body: { ...photo, listing_number: listing.listing_number, filename: "front.jpg" },
    });
    expect(r.status, r.text).toBe(201);
    expect(r.json, r.text).toMatchObject({
      method: "PUT",
      status: "pending",
      headers: { "Content-Type": "image/jpeg", "Content-Length": "1024" },
      listing_number: listing.listing_number,
      filename: "front.jpg",
      asset_type: "photo",
    });
    expect(r.json.upload_id).toMatch(/^upl_/);
    const ttl = (Date.parse(r.json.expires_at) - Date.now()) / 1000;
    expect(ttl, r.text).toBeGreaterThan(14 * 60);
    expect(ttl, r.text).toBeLessThanOrEqual(15 * 60);
    const [row] = await uploadsOf(t.agencyId);
    expect(row, r.text).toMatchObject({
      id: r.json.upload_id,
      status: "pending",
      sizeBytes: 1024,
      contentType: "image/jpeg",
      filename: "front.jpg",
    });
  });

  it("a listing_number of another agency (or none at all) is listing_not_found, and nothing is recorded", async () => {
    const t = await makeTenant();
    const other = await makeTenant();
    const theirs = await makeListing(other);
    expectError(
      await call(UPLOAD, { key: t.key, body: { ...photo, listing_number: theirs.listing_number } }),
      404,
      "listing_not_found",
    );
    expectError(
      await call(UPLOAD, { key: t.key, body: { ...photo, listing_number: "zzzzzzz" } }),
      404,
      "listing_not_found",
    );
    expect(await uploadsOf(t.agencyId)).toEqual([]);
  });

  it("a replay with the same idempotency key answers the same upload", async () => {
    const t = await makeTenant();
    const key = crypto.randomUUID();
    const a = await call(UPLOAD, { key: t.key, body: photo, idempotencyKey: key });
    const b = await call(UPLOAD, { key: t.key, body: photo, idempotencyKey: key });
    expect(a.status, a.text).toBe(201);
    expect(b.status, b.text).toBe(201);
    expect(b.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(b.json.upload_id).toBe(a.json.upload_id);
    expect(await uploadsOf(t.agencyId)).toHaveLength(1);
  });
});

describe("dual authentication", () => {
  it("X-API-Key alone is accepted", async () => {
    const t = await makeTenant();
    const r = await call(UPLOAD, { key: t.key, body: photo });
    expect(r.status, r.text).toBe(201);
  });

  it("the session cookie alone is accepted, and the upload is the session user's", async () => {
    const t = await makeTenant();
    const r = await call(UPLOAD, { body: photo, headers: cookie(await sessionFor(t.agent.id)) });
    expect(r.status, r.text).toBe(201);
    const [row] = await uploadsOf(t.agencyId);
    expect(row?.createdByUserId, r.text).toBe(t.agent.id);
  });

  it("the cookie wins over the key: a viewer's cookie with the owner's key is role_forbidden", async () => {
    const t = await makeTenant();
    expectError(
      await call(UPLOAD, { key: t.key, body: photo, headers: cookie(await sessionFor(t.viewer.id)) }),
      403,
      "role_forbidden",
    );
  });

  it("the cookie wins over the key: an agent's cookie with an unknown key is accepted", async () => {
    const t = await makeTenant();
    const r = await call(UPLOAD, {
      key: `sk_test_${"A".repeat(43)}`,
      body: photo,
      headers: cookie(await sessionFor(t.agent.id)),
    });
    expect(r.status, r.text).toBe(201);
  });

  it(
    "the cookie wins over the key: an agency's cookie with another agency's key acts for the " + "cookie's agency",
    async () => {
      const t = await makeTenant();
      const other = await makeTenant();
      const r = await call(UPLOAD, { key: other.key, body: photo, headers: cookie(await sessionFor(t.teamLead.id)) });
      expect(r.status, r.text).toBe(201);
      expect(await uploadsOf(t.agencyId)).toHaveLength(1);
      expect(await uploadsOf(other.agencyId)).toHaveLength(0);
    },
  );

  it("neither key nor cookie is 401 auth_required", async () => {
    expectError(await call(UPLOAD, { body: photo }), 401, "auth_required");
  });

  it("an unknown or expired session cookie without a key is 401 auth_required", async () => {
    expectError(await call(UPLOAD, { body: photo, headers: cookie("not-a-session") }), 401, "auth_required");
  });

  it("a viewer's session is 403 role_forbidden", async () => {
    const t = await makeTenant();
    const r = await call(UPLOAD, { body: photo, headers: cookie(await sessionFor(t.viewer.id)) });
    expectError(r, 403, "role_forbidden");
    expect(await uploadsOf(t.agencyId)).toHaveLength(0);
  });

  it("every agency role but viewer may upload", async () => {
    const t = await makeTenant({ role: "broker" });
    const d = db();
    const assistant = await createUser(d, {
      managerId: t.agent.id,
      role: "assistant",
      name: "Assistant",
      email: `${unique("asst")}@example.test`,
    });
    for (const user of [t.owner, t.teamLead, t.agent, assistant]) {
      const r = await call(UPLOAD, { body: photo, headers: cookie(await sessionFor(user.id)) });
      expect(r.status, r.text).toBe(201);
    }
  });

  it("a platform user's session resolves to no agency: 500 agency_resolution_failed", async () => {
    const d = db();
    const platform = await createAgency(d, { name: unique("platform"), kind: "platform" });
    const admin = await createUser(d, {
      agencyId: platform.id,
      role: "admin",
      name: "Admin",
      email: `${unique("admin")}@example.test`,
    });
    expectError(
      await call(UPLOAD, { body: photo, headers: cookie(await sessionFor(admin.id)) }),
      500,
      "agency_resolution_failed",
    );
  });

  it("a key minted by a platform admin for the agency may upload", async () => {
    const t = await makeTenant();
    const { key } = await makePlatformKey(t.agencyId);
    const r = await call(UPLOAD, { key, body: photo });
    expect(r.status, r.text).toBe(201);
  });

  it("a key without media:write is auth.scope_denied; Authorization: Bearer is api_key_header_mismatch", async () => {
    const t = await makeTenant();
    const { secret } = await mintKey(db(), {
      agencyId: t.agencyId,
      mintedByUserId: t.owner.id,
      mode: "test",
      scopes: ["listings:read"],
    });
    expectError(await call(UPLOAD, { key: secret, body: photo }), 403, "auth.scope_denied");
    expectError(
      await call(UPLOAD, { body: photo, headers: { Authorization: `Bearer ${t.key}` } }),
      401,
      "api_key_header_mismatch",
    );
  });
});

describe("queue faults", () => {
  it(
    "503 queue_unavailable with Retry-After when the media queue refuses the job; nothing is recorded and a retry " +
      "succeeds",
    async () => {
      const t = await makeTenant();
      const listing = await makeListing(t);
      const send = vi.spyOn(env.MEDIA_QUEUE, "send").mockRejectedValue(new Error("queue down"));
      const logs = captureErrorLogs();
      const idem = crypto.randomUUID();
      const body = { ...photo, listing_number: listing.listing_number };
      const r = await call(UPLOAD, { key: t.key, body, idempotencyKey: idem });
      expectError(r, 503, "queue_unavailable");
      expect(logs).toEqual([
        expect.objectContaining({ level: "error", job: "upload.settle", error: "Error: queue down" }),
      ]);
      expect(Number(r.headers.get("Retry-After")), r.text).toBeGreaterThan(0);
      expect(send).toHaveBeenCalled();
      expect(await uploadsOf(t.agencyId)).toEqual([]);

      send.mockRestore();
      const again = await call(UPLOAD, { key: t.key, body, idempotencyKey: idem });
      expect(again.status, again.text).toBe(201);
      expect(again.headers.get("X-Idempotent-Replay")).toBeNull();
      expect(await uploadsOf(t.agencyId)).toHaveLength(1);
    },
  );
});

describe("the Worker's signed upload path", () => {
  async function announce(t: Tenant, body: Record<string, unknown> = photo) {
    const r = await call(UPLOAD, { key: t.key, body });
    expect(r.status, r.text).toBe(201);
    return r.json as { upload_id: string; url: string; headers: Record<string, string> };
  }
  const bytes = (n: number) => Uint8Array.from({ length: n }, (_, i) => i % 251);

  it("without R2 credentials the URL is the service's own path, outside /api/v1", async () => {
    const t = await makeTenant();
    const u = await announce(t);
    const url = new URL(u.url);
    expect(url.origin).toBe(BASE);
    expect(url.pathname).toBe(`/uploads/${u.upload_id}`);
    expect(url.searchParams.get("expires")).toMatch(/^\d+$/);
    expect(url.searchParams.get("sig")).toMatch(/^[\w-]{8}\.[\w-]{43}$/);
  });

  it("streams the bytes into R2 and marks the upload completed", async () => {
    const t = await makeTenant();
    const u = await announce(t, { ...photo, size_bytes: 3000 });
    const data = bytes(3000);
    const r = await put(u.url, data, u.headers);
    expect(r.status, r.text).toBe(200);
    expect(r.json, r.text).toMatchObject({ upload_id: u.upload_id, status: "completed", size_bytes: 3000 });
    const [row] = await uploadsOf(t.agencyId);
    expect(row?.status).toBe("completed");
    const object = await env.UPLOADS.get(row!.objectKey);
    expect(object, "object in R2").not.toBeNull();
    expect(object!.httpMetadata?.contentType).toBe("image/jpeg");
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(data);
  });

  it("a second PUT to a completed upload is upload_already_completed", async () => {
    const t = await makeTenant();
    const u = await announce(t, { ...photo, size_bytes: 10 });
    expect((await put(u.url, bytes(10), u.headers)).status).toBe(200);
    const r = await put(u.url, bytes(10), u.headers);
    expect(r.status, r.text).toBe(409);
    expect(r.json.error.code).toBe("upload_already_completed");
  });

  it("two PUTs at once: one stores its file, the other is upload_already_completed, nothing overwritten", async () => {
    const t = await makeTenant();
    const u = await announce(t, { ...photo, size_bytes: 4096 });
    const fast = bytes(4096);
    const slow = Uint8Array.from(fast, (b) => 255 - b);
    // The slow PUT starts first and finishes last: it must not replace the fast one's object.
    const trickle = (data: Uint8Array, ms: number) => {
      let sent = 0;
      return new ReadableStream<Uint8Array>({
        async pull(controller) {
          await new Promise((r) => setTimeout(r, ms));
          controller.enqueue(data.slice(sent, sent + 1024));
          sent += 1024;
          if (sent >= data.length) controller.close();
        },
      });
    };
    const [late, early] = await Promise.all([
      put(u.url, trickle(slow, 60), { "Content-Type": "image/jpeg" }),
      put(u.url, trickle(fast, 5), { "Content-Type": "image/jpeg" }),
    ]);
    expect(early.status, early.text).toBe(200);
    expect(late.status, late.text).toBe(409);
    expect(late.json.error.code).toBe("upload_already_completed");
    const [row] = await uploadsOf(t.agencyId);
    expect(row).toMatchObject({ status: "completed", objectEtag: expect.any(String) });
    const object = await env.UPLOADS.get(row!.objectKey);
    expect(object!.etag).toBe(row!.objectEtag);
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(fast);
  });

  it("a PUT that loses to a stored file changes nothing, even before the upload is marked completed", async () => {
    const t = await makeTenant();
    const u = await announce(t, { ...photo, size_bytes: 10 });
    const [row] = await uploadsOf(t.agencyId);
    // The first PUT's object is in, its completion not yet written.
    await env.UPLOADS.put(row!.objectKey, bytes(10));
    const r = await put(
      u.url,
      Uint8Array.from(bytes(10), (b) => b + 1),
      u.headers,
    );
    expect(r.status, r.text).toBe(409);
    expect(r.json.error.code).toBe("upload_already_completed");
    const object = await env.UPLOADS.get(row!.objectKey);
    expect(new Uint8Array(await object!.arrayBuffer())).toEqual(bytes(10));
  });

  it.each([
    ["fewer bytes than declared", 99],
    ["more bytes than declared", 101],
  ])("refuses %s and stores nothing", async (_label, n) => {
    const t = await makeTenant();
    const u = await announce(t, { ...photo, size_bytes: 100 });
    const r = await put(
      u.url,
      bytes(n),
      { "Content-Type": "image/jpeg" },
      { UPLOADS: readingBodiesFirst(env.UPLOADS) },
    );
    expect(r.status, r.text).toBe(400);
    expect(r.json.error.code, r.text).toBe("upload_size_mismatch");
    const [row] = await uploadsOf(t.agencyId);
    expect(row?.status).toBe("pending");
    expect(await env.UPLOADS.head(row!.objectKey)).toBeNull();
  });

  it("refuses a Content-Length other than the declared size before reading the body", async () => {
    const t = await makeTenant();
    const u = await announce(t, { ...photo, size_bytes: 100 });
    const r = await put(u.url, bytes(100), { "Content-Type": "image/jpeg", "Content-Length": "99" });
    expect(r.json?.error?.code, r.text).toBe("upload_size_mismatch");
  });

  it("refuses another Content-Type with 415 and stores nothing", async () => {
    const t = await makeTenant();
    const u = await announce(t, { ...photo, size_bytes: 10 });
    const r = await put(u.url, bytes(10), { "Content-Type": "image/png" });
    expect(r.status, r.text).toBe(415);
    expect(r.json.error.code).toBe("request_content_type_mismatch");
    expect(r.json.error.details.accepted).toEqual(["image/jpeg"]);
    const [row] = await uploadsOf(t.agencyId);
    expect(await env.UPLOADS.head(row!.objectKey)).toBeNull();
  });

  it("refuses a tampered signature, another upload's signature, and an expired URL", async () => {
    const t = await makeTenant();
    const a = await announce(t, { ...photo, size_bytes: 10 });
    const b = await announce(t, { ...photo, size_bytes: 10 });
    const tampered = new URL(a.url);
    tampered.searchParams.set("sig", `${tampered.searchParams.get("sig")!.slice(0, -2)}AA`);
    expect((await put(tampered.toString(), bytes(10), a.headers)).json.error.code).toBe("upload_url_invalid");
    const swapped = new URL(a.url);
    swapped.pathname = `/uploads/${b.upload_id}`;
    expect((await put(swapped.toString(), bytes(10), a.headers)).json.error.code).toBe("upload_url_invalid");
    const stretched = new URL(a.url);
    stretched.searchParams.set("expires", String(Number(stretched.searchParams.get("expires")) + 3600));
    expect((await put(stretched.toString(), bytes(10), a.headers)).json.error.code).toBe("upload_url_invalid");

    vi.useFakeTimers({ now: Date.now() + 16 * 60 * 1000, toFake: ["Date"] });
    try {
      const r = await put(a.url, bytes(10), a.headers);
      expect(r.status, r.text).toBe(403);
      expect(r.json.error.code, r.text).toBe("upload_url_expired");
    } finally {
      vi.useRealTimers();
    }
  });

  it("is not part of the public OpenAPI document", async () => {
    const r = await call("/api/v1/openapi.json");
    expect(Object.keys(r.json.paths)).toContain("/api/v1/media/upload");
    expect(Object.keys(r.json.paths).filter((p) => p.startsWith("/uploads"))).toEqual([]);
  });
});

describe("pre-signed R2 URLs", () => {
  const creds = {
    accountId: "0123456789abcdef0123456789abcdef",
    accessKeyId: "AKIDEXAMPLE0001",
    secretAccessKey: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
    bucket: "alms-uploads-sandbox",
  };

  it("SigV4 over method, key, expiry, Content-Type, Content-Length, If-None-Match, checked independently", async () => {
    const now = new Date("2026-11-22T15:30:00.000Z");
    const target = await presignR2(
      creds,
      "agy_1/k3v9x2a/upl_1/front elevation (1).jpg",
      "image/jpeg",
      4_718_592,
      now,
      900,
    );
    const url = new URL(target.url);
    expect(url.host).toBe(`${creds.accountId}.r2.cloudflarestorage.com`);
    expect(url.pathname).toBe(`/${creds.bucket}/agy_1/k3v9x2a/upl_1/front%20elevation%20%281%29.jpg`);
    expect(Object.fromEntries(url.searchParams)).toMatchObject({
      "X-Amz-Algorithm": "AWS4-HMAC-SHA256",
      "X-Amz-Credential": `${creds.accessKeyId}/20261122/auto/s3/aws4_request`,
      "X-Amz-Date": "20261122T153000Z",
      "X-Amz-Expires": "900",
      "X-Amz-SignedHeaders": "content-length;content-type;host;if-none-match",
    });
    expect(target.expiresAt.toISOString()).toBe("2026-11-22T15:45:00.000Z");
    expect(target.headers).toEqual({ "Content-Type": "image/jpeg", "Content-Length": "4718592", "If-None-Match": "*" });
    const signature = url.searchParams.get("X-Amz-Signature");
    expect(signature).toBe(await expectedSignature(url, "PUT", target.headers, creds.secretAccessKey));
    // Another type or size would need another signature.
    expect(signature).not.toBe(
      await expectedSignature(url, "PUT", { ...target.headers, "Content-Length": "4718593" }, creds.secretAccessKey),
    );
    expect(signature).not.toBe(
      await expectedSignature(url, "PUT", { ...target.headers, "Content-Type": "image/png" }, creds.secretAccessKey),
    );
    expect(signature).not.toBe(await expectedSignature(url, "PUT", target.headers, "another-secret"));
    // A PUT without the create-only condition does not match the signature either.
    const { "If-None-Match": _, ...unconditional } = target.headers;
    expect(signature).not.toBe(
      await expectedSignature(url, "PUT", { ...unconditional, "If-None-Match": "" }, creds.secretAccessKey),
    );
  });

  it("with the R2 secrets configured, the endpoint answers an R2 URL for the upload's object key", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const r2env = {
      ...env,
      R2_ACCOUNT_ID: creds.accountId,
      R2_ACCESS_KEY_ID: creds.accessKeyId,
      R2_SECRET_ACCESS_KEY: creds.secretAccessKey,
      R2_BUCKET_NAME: creds.bucket,
    } as Env;
    const ctx = createExecutionContext();
    const res = await worker.fetch(
      new Request(`${BASE}${UPLOAD}`, {
        method: "POST",
        headers: { "X-API-Key": t.key, "Content-Type": "application/json", "X-Idempotency-Key": crypto.randomUUID() },
        body: JSON.stringify({ ...photo, listing_number: listing.listing_number, filename: "front.jpg" }),
      }),
      r2env,
      ctx,
    );
    await waitOnExecutionContext(ctx);
    const text = await res.text();
    expect(res.status, text).toBe(201);
    const body = JSON.parse(text);
    const url = new URL(body.url);
    const [row] = await uploadsOf(t.agencyId);
    expect(url.host).toBe(`${creds.accountId}.r2.cloudflarestorage.com`);
    expect(decodeURIComponent(url.pathname)).toBe(`/${creds.bucket}/${row!.objectKey}`);
    expect(row!.objectKey).toBe(`${t.agencyId}/${listing.listing_number}/${row!.id}/front.jpg`);
    expect(url.searchParams.get("X-Amz-SignedHeaders")).toBe("content-length;content-type;host;if-none-match");
    expect(body.headers).toEqual({ "Content-Type": "image/jpeg", "Content-Length": "1024", "If-None-Match": "*" });
    expect(Number(url.searchParams.get("X-Amz-Expires"))).toBeGreaterThan(14 * 60);
    expect(Number(url.searchParams.get("X-Amz-Expires"))).toBeLessThanOrEqual(15 * 60);
    expect(url.searchParams.get("X-Amz-Signature")).toBe(
      await expectedSignature(url, "PUT", body.headers, creds.secretAccessKey),
    );
  });
});
