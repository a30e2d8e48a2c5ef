import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { findListing } from "../../src/domain/listings/reads";
import { completePendingUploads } from "../../src/media/sandbox";
import { call, db, makeListing, makeTenant } from "../support/harness";

describe("completing uploads in the sandbox", () => {
  it("never writes its placeholder over bytes that arrived after it looked", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const made = await call("/api/v1/media/upload", {
      key: t.key,
      body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 16, listing_number: listing.listing_number },
    });
    expect(made.status, made.text).toBe(201);
    // The real bytes are in the bucket, but the helper's look happened just before they landed.
    const real = new TextEncoder().encode("0123456789abcdef");
    const objectKey = await keyOf(made.json.upload_id);
    await env.UPLOADS.put(objectKey, real);
    let looked = false;
    const late = new Proxy(env.UPLOADS, {
      get(target, prop) {
        if (prop === "head" && !looked) {
          looked = true;
          return async () => null;
        }
        const value = Reflect.get(target, prop);
        return typeof value === "function" ? value.bind(target) : value;
      },
    });
    const l = await findListing(db(), t.agencyId, listing.listing_number);
    const done = await completePendingUploads(db(), { ...env, UPLOADS: late } as Env, l);
    expect(done.completed).toEqual([made.json.upload_id]);
    const stored = await env.UPLOADS.get(objectKey);
    expect(new TextDecoder().decode(await stored!.arrayBuffer())).toBe("0123456789abcdef");
    expect(stored!.customMetadata?.sandbox_placeholder).toBeUndefined();
  });
});

/** The R2 key the upload's bytes go to. */
async function keyOf(uploadId: string): Promise<string> {
  const row = await env.DB.prepare("SELECT object_key FROM media_uploads WHERE id = ?").bind(uploadId).first<{
    object_key: string;
  }>();
  return row!.object_key;
}
