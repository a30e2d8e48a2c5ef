import { describe, expect, it } from "vitest";
import { decrypt, encrypt, rowBinding, SealError, sealPrefix, sign, verify } from "../../src/lib/crypto";
import { decodeCursor, encodeCursor } from "../../src/lib/cursor";
import { base64url } from "../../src/lib/encoding";
import { DomainError } from "../../src/lib/errors";
import { KEY_ID_LENGTH, keyIdOf, keyringOf } from "../../src/lib/keyring";
import { checkLocalUploadUrl, localUploadUrl } from "../../src/media/local-signing";

const enc = new TextEncoder();
const OLD = "old-master-key-0123456789abcdef0123456789abcdef";
const NEW = "new-master-key-fedcba9876543210fedcba9876543210";
const OTHER = "unrelated-key-00000000000000000000000000000000";

const oldRing = keyringOf({ SECRET_KEY: OLD });
const rotated = keyringOf({ SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: OLD });
const dropped = keyringOf({ SECRET_KEY: NEW });
const bound = rowBinding("webhook_endpoints", "agy_a", "we_1");

/** The purpose-bound key the code before the keyring derived: HKDF-SHA256, empty salt, the purpose as info. */
async function legacyKey(secret: string, purpose: string, algorithm: SubtleCryptoImportKeyAlgorithm) {
  const base = await crypto.subtle.importKey("raw", enc.encode(secret), "HKDF", false, ["deriveKey"]);
  const usages = algorithm.name === "HMAC" ? ["sign"] : ["encrypt"];
  const info = enc.encode(purpose);
  return crypto.subtle.deriveKey(
    { name: "HKDF", hash: "SHA-256", salt: new Uint8Array(0), info },
    base,
    algorithm,
    false,
    usages,
  );
}

/** A `v1.<nonce>.<ciphertext>` seal exactly as the code before the keyring made it. */
async function legacySeal(secret: string, purpose: string, plaintext: string, boundTo: string) {
  const key = await legacyKey(secret, purpose, { name: "AES-GCM", length: 256 });
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const ct = await crypto.subtle.encrypt(
    { name: "AES-GCM", iv, additionalData: enc.encode(boundTo) },
    key,
    enc.encode(plaintext),
  );
  return `v1.${base64url(iv)}.${base64url(new Uint8Array(ct))}`;
}

/** A bare base64url HMAC, as signatures were before the keyring. */
async function legacyMac(secret: string, purpose: string, message: string) {
  const key = await legacyKey(secret, purpose, { name: "HMAC", hash: "SHA-256", length: 256 });
  return base64url(new Uint8Array(await crypto.subtle.sign("HMAC", key, enc.encode(message))));
}

describe("the keyring", () => {
  it("is SECRET_KEY, then each older key of SECRET_KEY_PREVIOUS, once", () => {
    expect(keyringOf({ SECRET_KEY: NEW }).secrets).toEqual([NEW]);
    expect(keyringOf({ SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: "" }).secrets).toEqual([NEW]);
    const ring = keyringOf({ SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: ` ${OLD}, ${OTHER}\n${NEW},${OLD} ` });
    expect(ring.secrets).toEqual([NEW, OLD, OTHER]);
  });

  it("names each key by an id derived from the key alone", async () => {
    const [a, b, again] = await Promise.all([keyIdOf(OLD), keyIdOf(NEW), keyIdOf(OLD)]);
    expect(a).toMatch(new RegExp(`^[A-Za-z0-9_-]{${KEY_ID_LENGTH}}$`));
    expect(again).toBe(a);
    expect(b).not.toBe(a);
  });
});

describe("seals", () => {
  it("name the key that made them, and open under any key of the ring", async () => {
    const sealed = await encrypt(oldRing, "purpose", "whsec_secret", bound);
    const [version, kid, nonce, ct] = sealed.split(".");
    expect(version).toBe("v2");
    expect(kid).toBe(await keyIdOf(OLD));
    expect(nonce).toHaveLength(16);
    expect(ct!.length).toBeGreaterThan(16);
    expect(sealed.startsWith(await sealPrefix(oldRing))).toBe(true);
    expect(await decrypt(rotated, "purpose", sealed, bound)).toBe("whsec_secret");
    // The newest key seals.
    expect((await encrypt(rotated, "purpose", "x", bound)).startsWith(`v2.${await keyIdOf(NEW)}.`)).toBe(true);
  });

  it("made under a key that is not in the ring do not open, with an error naming the key id", async () => {
    const sealed = await encrypt(oldRing, "purpose", "whsec_secret", bound);
    const kid = await keyIdOf(OLD);
    const failure = await decrypt(dropped, "purpose", sealed, bound).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(SealError);
    expect((failure as Error).message).toBe(`sealed under key ${kid}, which is not in the keyring`);
    expect((failure as Error).message).not.toContain("whsec_secret");
    // A seal that claims a key of the ring but was made under another does not open either.
    const forged = sealed.replace(`.${kid}.`, `.${await keyIdOf(NEW)}.`);
    await expect(decrypt(dropped, "purpose", forged, bound)).rejects.toThrow(SealError);
    await expect(decrypt(rotated, "purpose", "v3.abc.def.ghi", bound)).rejects.toThrow("unsupported ciphertext");
  });

  it("made before the keyring (v1) still open under whichever key of the ring made them", async () => {
    const legacy = await legacySeal(OLD, "webhook-signing-secret", "whsec_legacy", bound);
    expect(await decrypt(oldRing, "webhook-signing-secret", legacy, bound)).toBe("whsec_legacy");
    expect(await decrypt(rotated, "webhook-signing-secret", legacy, bound)).toBe("whsec_legacy");
    await expect(decrypt(dropped, "webhook-signing-secret", legacy, bound)).rejects.toThrow(SealError);
    await expect(decrypt(rotated, "other-purpose", legacy, bound)).rejects.toThrow(SealError);
    await expect(decrypt(rotated, "webhook-signing-secret", legacy, rowBinding("x"))).rejects.toThrow(SealError);
  });

  it("with a subkey (one agency's) open only under that subkey", async () => {
    const sealed = await encrypt(rotated, "idempotency-response", "{}", bound, "agency:agy_a");
    expect(await decrypt(rotated, "idempotency-response", sealed, bound, "agency:agy_a")).toBe("{}");
    await expect(decrypt(rotated, "idempotency-response", sealed, bound, "agency:agy_b")).rejects.toThrow(SealError);
    await expect(decrypt(rotated, "idempotency-response", sealed, bound)).rejects.toThrow(SealError);
  });
});

describe("signatures", () => {
  it("carry the key id and verify under any key of the ring, and under no other", async () => {
    const signature = await sign(oldRing, "upload-url", "message");
    expect(signature.split(".")[0]).toBe(await keyIdOf(OLD));
    expect(await verify(oldRing, "upload-url", "message", signature)).toBe(true);
    expect(await verify(rotated, "upload-url", "message", signature)).toBe(true);
    expect(await verify(dropped, "upload-url", "message", signature)).toBe(false);
    expect(await verify(rotated, "upload-url", "another message", signature)).toBe(false);
    expect(await verify(rotated, "cursor:v1", "message", signature)).toBe(false);
  });

  it("made before the keyring (a bare MAC) verify under whichever key of the ring made them", async () => {
    const legacy = await legacyMac(OLD, "upload-url", "message");
    expect(await verify(rotated, "upload-url", "message", legacy)).toBe(true);
    expect(await verify(dropped, "upload-url", "message", legacy)).toBe(false);
  });

  it("keep upload URLs signed under an older key of the ring working, and no others", async () => {
    const upload = { id: "upl_1", contentType: "image/jpeg", sizeBytes: 10 };
    const url = new URL(await localUploadUrl(oldRing, "https://api.test", upload, new Date(Date.now() + 60_000)));
    const expires = url.searchParams.get("expires") ?? undefined;
    const sig = url.searchParams.get("sig") ?? undefined;
    expect(sig?.startsWith(`${await keyIdOf(OLD)}.`)).toBe(true);
    expect(await checkLocalUploadUrl(rotated, upload, expires, sig)).toBe("ok");
    expect(await checkLocalUploadUrl(dropped, upload, expires, sig)).toBe("invalid");
    expect(await checkLocalUploadUrl(rotated, { ...upload, sizeBytes: 11 }, expires, sig)).toBe("invalid");
  });
});

describe("cursors", () => {
  const at = { createdAt: "2026-01-01T00:00:00.000Z", id: "lst_1" };

  it("issued under an older key of the ring still page; the new ones name the newest key", async () => {
    const cursor = await encodeCursor(oldRing, "listings", at);
    expect(cursor.split(".")).toHaveLength(3);
    expect(cursor.split(".")[1]).toBe(await keyIdOf(OLD));
    expect(await decodeCursor(rotated, "listings", cursor)).toEqual(at);
    expect((await encodeCursor(rotated, "listings", at)).split(".")[1]).toBe(await keyIdOf(NEW));
  });

  it("made before the keyring (payload.mac) still page", async () => {
    const payload = base64url(enc.encode(JSON.stringify({ l: "listings", k: [at.createdAt, at.id] })));
    const legacy = `${payload}.${(await legacyMac(OLD, "cursor:v1", payload)).slice(0, 22)}`;
    expect(await decodeCursor(rotated, "listings", legacy)).toEqual(at);
  });

  it("under a key no longer in the ring are request_query_invalid, like any other bad cursor", async () => {
    const cursor = await encodeCursor(oldRing, "listings", at);
    const failure = await decodeCursor(dropped, "listings", cursor).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(DomainError);
    expect((failure as DomainError).code).toBe("request_query_invalid");
    expect((failure as DomainError).message).toContain("integrity check failed");
    for (const malformed of [`${cursor}.x`, cursor.replace(/\.[^.]*$/, "."), `.${cursor}`]) {
      await expect(decodeCursor(rotated, "listings", malformed), malformed).rejects.toThrow(DomainError);
    }
  });
});
