import { eq } from "drizzle-orm";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { calendarConnections, deliveryDestinations, webhookEndpoints } from "../../src/db/schema";
import { getUserById } from "../../src/domain/people/hierarchy";
import { decrypt, encrypt, rowBinding, SealError, sealPrefix, sign, verify } from "../../src/lib/crypto/crypto";
import { base64url } from "../../src/lib/crypto/encoding";
import { KEY_ID_LENGTH, type Keyring, keyIdOf, keyringOf } from "../../src/lib/crypto/keyring";
import { decodeCursor, encodeCursor } from "../../src/lib/cursor";
import { DomainError } from "../../src/lib/errors";
import { openDestination, saveDestination } from "../../src/media/delivery/destinations";
import { checkLocalUploadUrl, localUploadUrl } from "../../src/media/uploads/local-signing";
import { BASE, db, direct, expectError, makeTenant, mockFetch, OPERATOR_TOKEN, type Tenant } from "../support/harness";

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

describe("rotating the master key in a running service", () => {
  /** The Worker's secrets before, during and after the rotation. */
  const BEFORE = { SECRET_KEY: OLD, SECRET_KEY_PREVIOUS: undefined };
  const DURING = { SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: OLD };
  const AFTER = { SECRET_KEY: NEW, SECRET_KEY_PREVIOUS: undefined };
  type Secrets = typeof BEFORE | typeof DURING;

  const FEED = "https://cal.example.com/rotation.ics";
  const availability =
    `/api/v1/scheduling/availability?from=${encodeURIComponent("2026-11-30T00:00:00-08:00")}` +
    `&to=${encodeURIComponent("2026-12-01T00:00:00-08:00")}` +
    "&duration_minutes=60&timezone=UTC";

  /** A request to the Worker running with `secrets`, as an integrator (a key) or the operator sends it. */
  function send(
    secrets: Secrets,
    path: string,
    opts: { key?: string; method?: string; body?: unknown; idempotencyKey?: string } = {},
  ) {
    const headers = new Headers();
    if (opts.key) headers.set("X-API-Key", opts.key);
    else headers.set("Authorization", `Bearer ${OPERATOR_TOKEN}`);
    if (opts.idempotencyKey) headers.set("X-Idempotency-Key", opts.idempotencyKey);
    if (opts.body !== undefined) headers.set("Content-Type", "application/json");
    const body = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    return direct(new Request(new URL(path, BASE), { method: opts.method ?? "GET", headers, body }), secrets);
  }

  const post = (secrets: Secrets, t: Tenant, path: string, body?: unknown, idempotencyKey = crypto.randomUUID()) =>
    send(secrets, path, { key: t.key, method: "POST", body, idempotencyKey });

  /** The receivers and the calendar feed, answering what the Worker calls. */
  function outside() {
    const received: Request[] = [];
    mockFetch(async (req) => {
      if (req.url === FEED) return new Response("BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n");
      received.push(req.clone());
      return new Response("ok");
    });
    return received;
  }

  /** A test delivery to `endpointId` arrives signed with `secret`. */
  async function deliveredSignedWith(secrets: Secrets, t: Tenant, endpointId: string, secret: string, seen: Request[]) {
    const before = seen.length;
    const r = await post(secrets, t, `/api/v1/webhooks/endpoints/${endpointId}/test`);
    expect(r.json, r.text).toMatchObject({ delivered: true, error: null });
    const req = seen[before]!;
    const headers = Object.fromEntries(req.headers);
    expect(new Webhook(secret).verify(await req.text(), headers)).toMatchObject({ event_type: "webhook.test" });
  }

  async function availabilityOpens(secrets: Secrets, t: Tenant) {
    const r = await send(secrets, availability, { key: t.key });
    expect(r.status, r.text).toBe(200);
  }

  async function destinationOpens(ring: Keyring, t: Tenant) {
    const destination = await openDestination(db(), ring, { destinationUserId: t.agent.id, agencyId: t.agencyId });
    expect(destination?.secretAccessKey).toBe("storage-secret");
  }

  async function runReseal(secrets: Secrets) {
    const r = await send(secrets, "/internal/v1/operations/reseal", { method: "POST" });
    expect(r.status, r.text).toBe(200);
    return r.json as {
      current_key_id: string;
      previous_key_ids: string[];
      resealed: number;
      unopenable: number;
      remaining_by_key: Record<string, number>;
      done: boolean;
    };
  }

  it("loses nothing: everything works during the rotation, and what persists still works without the old key", async () => {
    const [oldKid, newKid, otherKid] = await Promise.all([keyIdOf(OLD), keyIdOf(NEW), keyIdOf(OTHER)]);
    const t = await makeTenant();
    const seen = outside();

    // Before: everything made under the old key.
    const registration = { url: "https://hooks.example.com/rotation", event_types: ["listing.cancelled"] };
    const idem = crypto.randomUUID();
    const created = await post(BEFORE, t, "/api/v1/webhooks/endpoints", registration, idem);
    expect(created.status, created.text).toBe(201);
    const hook = created.json as { id: string; signing_secret: string };
    // A second endpoint whose secret was sealed before the keyring (v1).
    const older = await post(BEFORE, t, "/api/v1/webhooks/endpoints", {
      ...registration,
      url: `${registration.url}/v1`,
    });
    expect(older.status, older.text).toBe(201);
    const olderHook = older.json as { id: string; signing_secret: string };
    const binding = rowBinding("webhook_endpoints", t.agencyId, olderHook.id);
    const v1 = await legacySeal(OLD, "webhook-signing-secret", olderHook.signing_secret, binding);
    await db().update(webhookEndpoints).set({ secretSealed: v1 }).where(eq(webhookEndpoints.id, olderHook.id));

    const connected = await send(BEFORE, `/internal/v1/users/${t.owner.id}/calendar`, {
      method: "PUT",
      body: { provider: "ics", feed_url: FEED },
    });
    expect(connected.status, connected.text).toBe(200);
    await saveDestination(db(), oldRing, await getUserById(db(), t.agent.id), {
      endpointUrl: "https://s3.example.com",
      bucket: "media",
      region: "auto",
      addressingStyle: "path",
      accessKeyId: "AKIA",
      secretAccessKey: "storage-secret",
      pathPrefix: "",
    });
    const firstPage = await send(BEFORE, "/api/v1/users?limit=1", { key: t.key });
    expect(firstPage.status, firstPage.text).toBe(200);
    const cursor: string = firstPage.json.next_cursor;
    expect(cursor.split(".")[1]).toBe(oldKid);
    const upload = await post(BEFORE, t, "/api/v1/media/upload", photo(16));
    expect(upload.status, upload.text).toBe(201);
    const secondUpload = await post(BEFORE, t, "/api/v1/media/upload", photo(16));
    expect(secondUpload.status, secondUpload.text).toBe(201);
    expect(new URL(upload.json.url).searchParams.get("sig")?.split(".")[0]).toBe(oldKid);

    // During: SECRET_KEY is the new key, the old one is in SECRET_KEY_PREVIOUS. Everything still works.
    await deliveredSignedWith(DURING, t, hook.id, hook.signing_secret, seen);
    await deliveredSignedWith(DURING, t, olderHook.id, olderHook.signing_secret, seen);
    await availabilityOpens(DURING, t);
    await destinationOpens(rotated, t);
    const secondPage = await send(DURING, `/api/v1/users?limit=1&cursor=${encodeURIComponent(cursor)}`, { key: t.key });
    expect(secondPage.status, secondPage.text).toBe(200);
    expect(secondPage.json.data[0].id).not.toBe(firstPage.json.data[0].id);
    const put = await direct(
      new Request(upload.json.url, {
        method: "PUT",
        headers: { "Content-Type": "image/jpeg", "Content-Length": "16" },
        body: new Uint8Array(16),
      }),
      DURING,
    );
    expect(put.status, put.text).toBe(200);
    const replay = await post(DURING, t, "/api/v1/webhooks/endpoints", registration, idem);
    expect(replay.status, replay.text).toBe(201);
    expect(replay.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(replay.json).toEqual(created.json);

    // A value no key of the ring opens is counted under its key, and left alone.
    const stray = await makeTenant();
    await saveDestination(db(), keyringOf({ SECRET_KEY: OTHER }), await getUserById(db(), stray.agent.id), {
      endpointUrl: "https://s3.example.com",
      bucket: "media",
      region: "auto",
      addressingStyle: "path",
      accessKeyId: "AKIA",
      secretAccessKey: "stray",
      pathPrefix: "",
    });

    // The re-seal job runs to completion; it names what is left, by key.
    const first = await runReseal(DURING);
    expect(first).toMatchObject({ current_key_id: newKid, previous_key_ids: [oldKid], unopenable: 1, done: false });
    expect(first.resealed).toBe(4);
    expect(first.remaining_by_key).toEqual({ [otherKid]: 1 });
    await db().delete(deliveryDestinations).where(eq(deliveryDestinations.userId, stray.agent.id));
    const second = await runReseal(DURING);
    expect(second).toMatchObject({ resealed: 0, unopenable: 0, remaining_by_key: {}, done: true });
    const sealed = [
      ...(await db().select({ v: webhookEndpoints.secretSealed }).from(webhookEndpoints)).map((r) => r.v),
      ...(await db().select({ v: calendarConnections.credentialsSealed }).from(calendarConnections)).map((r) => r.v),
      ...(await db().select({ v: deliveryDestinations.secretAccessKeySealed }).from(deliveryDestinations)).map(
        (r) => r.v,
      ),
    ];
    expect(sealed).toHaveLength(4);
    for (const value of sealed) expect(value.startsWith(`v2.${newKid}.`), value).toBe(true);

    // After: the old key is dropped. What persists still works; cursors and upload URLs it signed have expired.
    await deliveredSignedWith(AFTER, t, hook.id, hook.signing_secret, seen);
    await deliveredSignedWith(AFTER, t, olderHook.id, olderHook.signing_secret, seen);
    await availabilityOpens(AFTER, t);
    await destinationOpens(dropped, t);
    expect(await runReseal(AFTER)).toMatchObject({ previous_key_ids: [], resealed: 0, done: true });
    const stale = await send(AFTER, `/api/v1/users?limit=1&cursor=${encodeURIComponent(cursor)}`, { key: t.key });
    expectError(stale, 422, "request_query_invalid");
    const late = await direct(
      new Request(secondUpload.json.url, {
        method: "PUT",
        headers: { "Content-Type": "image/jpeg", "Content-Length": "16" },
        body: new Uint8Array(16),
      }),
      AFTER,
    );
    expectError(late, 403, "upload_url_invalid");
  });
});

const photo = (size: number) => ({ asset_type: "photo", content_type: "image/jpeg", size_bytes: size });
