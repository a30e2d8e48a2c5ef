import { afterEach, describe, expect, it, vi } from "vitest";
import { AUTH_FAILURE_LIMIT, forgetHeldBack, throttleKeyOf } from "../../src/http/admission/auth-throttle";
import { forgetKeys } from "../../src/http/admission/key-auth";
import { call, direct, expectError, makeTenant } from "../support/harness";
import { countD1 } from "../support/webhook-fixtures";

afterEach(() => {
  vi.restoreAllMocks();
  forgetKeys();
  forgetHeldBack();
});

const randomKey = () => {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  const token = btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
  return `sk_test_${token}`;
};
/** An address of the documentation range, new for each call so the binding's counts never carry over. */
let lastAddress = Math.floor(Math.random() * 200);
const address = () => `198.51.100.${(lastAddress++ % 250) + 1}`;
const from = (ip: string) => ({ "CF-Connecting-IP": ip });
/**
 * Failures to send until the address is refused: the binding counts in fixed windows, and a
 * window that ends partway splits the count, so the refusal may come in the next window.
 */
const FLOOD = 2 * AUTH_FAILURE_LIMIT + 5;

describe("failed authentication is throttled per client address before D1", () => {
  it("an address that keeps presenting unknown keys is refused without a D1 lookup; others are not", async () => {
    const t = await makeTenant();
    const flooder = address();
    // The tenant's own key, used once from that address before the flood, stays known to this isolate.
    expect((await call("/api/v1/users", { key: t.key, headers: from(flooder) })).status).toBe(200);
    let refusedAt = -1;
    for (let i = 0; i < FLOOD && refusedAt < 0; i++) {
      const r = await call("/api/v1/users", { key: randomKey(), headers: from(flooder) });
      if (r.status === 429) refusedAt = i;
      else expectError(r, 401, "api_key_invalid");
    }
    expect(refusedAt).toBeGreaterThanOrEqual(AUTH_FAILURE_LIMIT);

    const d1 = countD1();
    const held = await call("/api/v1/users", { key: randomKey(), headers: from(flooder) });
    const lookups = d1.matching(/from "?api_key_secrets"?/i);
    d1.stop();
    expectError(held, 429, "rate_limit_exceeded");
    expect(held.json.error.details).toMatchObject({ reason: "authentication_failures", limit: AUTH_FAILURE_LIMIT });
    expect(held.headers.get("retry-after")).toMatch(/^\d+$/);
    expect(held.headers.get("x-rate-limit-remaining")).toBe("0");
    expect(lookups).toBe(0);

    // A key this isolate already knows still works from that address; another address is not held back.
    expect((await call("/api/v1/users", { key: t.key, headers: from(flooder) })).status).toBe(200);
    expectError(await call("/api/v1/users", { key: randomKey(), headers: from(address()) }), 401, "api_key_invalid");
  });

  it("a held-back address still gets through with a real key a fresh isolate has never seen", async () => {
    const t = await makeTenant();
    const flooder = address();
    let refused = false;
    for (let i = 0; i < FLOOD && !refused; i++) {
      refused = (await call("/api/v1/users", { key: randomKey(), headers: from(flooder) })).status === 429;
    }
    expect(refused).toBe(true);
    // Another tenant behind the same address, on an isolate that has never seen its key.
    forgetKeys();
    expect((await call("/api/v1/users", { key: t.key, headers: from(flooder) })).status).toBe(200);
    // A guess, or a real key with one character of its tag changed, is still held back before D1.
    const last = t.key.at(-1) === "A" ? "B" : "A";
    const d1 = countD1();
    const guesses = [randomKey(), t.key.slice(0, -1) + last];
    for (const key of guesses)
      expectError(await call("/api/v1/users", { key, headers: from(flooder) }), 429, "rate_limit_exceeded");
    expect(d1.matching(/from "?api_key_secrets"?/i)).toBe(0);
    d1.stop();
  });

  it("dead session cookies count as failures too", async () => {
    const flooder = address();
    let refused = false;
    for (let i = 0; i < FLOOD && !refused; i++) {
      const r = await call("/api/v1/media/upload", {
        body: {},
        headers: { ...from(flooder), Cookie: `alms_session=${crypto.randomUUID()}` },
      });
      if (r.status === 429) refused = true;
      else expectError(r, 401, "auth_required");
    }
    expect(refused).toBe(true);
  });

  it("a request without a client address (a local call) is never held back by address", async () => {
    for (let i = 0; i < AUTH_FAILURE_LIMIT + 5; i++)
      expectError(await call("/api/v1/users", { key: randomKey() }), 401, "api_key_invalid");
  });

  it("counts IPv6 clients by their /64, so rotating addresses within it does not evade the limit", async () => {
    expect(throttleKeyOf("2001:db8:aa:1::7")).toBe("2001:db8:aa:1::/64");
    expect(throttleKeyOf("2001:0db8:00aa:0001:ffff:1:2:3")).toBe("2001:db8:aa:1::/64");
    expect(throttleKeyOf("2001:db8::1")).toBe("2001:db8:0:0::/64");
    expect(throttleKeyOf("::ffff:198.51.100.7")).toBe("198.51.100.7");
    expect(throttleKeyOf("198.51.100.7")).toBe("198.51.100.7");
    const net = `2001:db8:${Math.floor(Math.random() * 0xffff).toString(16)}:${Math.floor(Math.random() * 0xffff).toString(16)}`;
    const rotating = () =>
      `${net}:${Array.from({ length: 4 }, () => Math.floor(Math.random() * 0xffff).toString(16)).join(":")}`;
    let refused = false;
    for (let i = 0; i < FLOOD && !refused; i++) {
      const r = await call("/api/v1/users", { key: randomKey(), headers: from(rotating()) });
      if (r.status === 429) refused = true;
      else expectError(r, 401, "api_key_invalid");
    }
    expect(refused).toBe(true);
    // Another /64 is not held back.
    expectError(
      await call("/api/v1/users", { key: randomKey(), headers: from("2001:db8:ffff:fffe::1") }),
      401,
      "api_key_invalid",
    );
  });

  it("forged upload URLs are throttled like keys, and a genuine one is never held back", async () => {
    const t = await makeTenant();
    const flooder = address();
    const made = await call("/api/v1/media/upload", {
      key: t.key,
      body: { asset_type: "photo", content_type: "image/jpeg", size_bytes: 16 },
    });
    expect(made.status, made.text).toBe(201);
    const genuine = new URL(made.json.url);
    const forged = (i: number) => {
      const url = new URL(genuine);
      url.searchParams.set("sig", `${url.searchParams.get("sig")}x${i}`);
      return url.toString();
    };
    const put = (url: string) =>
      direct(
        new Request(url, {
          method: "PUT",
          headers: { ...from(flooder), "Content-Type": "image/jpeg", "Content-Length": "16" },
          body: new Uint8Array(16),
        }),
      );
    let refused = false;
    for (let i = 0; i < FLOOD && !refused; i++) {
      const r = await put(forged(i));
      if (r.status === 429) refused = true;
      else expectError(r, 403, "upload_url_invalid");
    }
    expect(refused).toBe(true);
    // A URL with no signature at all is refused without a lookup, and counted the same way.
    expectError(await put(genuine.toString().replace(/[?&]sig=[^&]*/, "")), 429, "rate_limit_exceeded");
    // The genuine URL, its signature verified from the request alone, still uploads from that address.
    const ok = await put(genuine.toString());
    expect(ok.status, ok.text).toBe(200);
  });
});
