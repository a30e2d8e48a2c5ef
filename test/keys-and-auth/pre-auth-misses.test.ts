import { afterEach, describe, expect, it, vi } from "vitest";
import { forgetKeys } from "../../src/http/admission/key-auth";
import { forgetSessions } from "../../src/http/admission/session-auth";
import { RecentMisses } from "../../src/lib/recent-misses";
import { call, expectError, internal, makeTenant } from "../support/harness";
import { countD1 } from "../support/webhook-fixtures";

afterEach(() => {
  vi.restoreAllMocks();
  forgetKeys();
  forgetSessions();
});

const randomToken = () => {
  const bytes = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, "-")
    .replace(/\//g, "_")
    .replace(/=+$/, "");
};
const cookie = (token: string) => ({ Cookie: `alms_session=${token}` });

describe("failed authentication stays off D1 when repeated", () => {
  it("an unknown key costs one D1 lookup per isolate, however often it is repeated", async () => {
    const key = `sk_test_${randomToken()}`;
    const d1 = countD1();
    for (let i = 0; i < 5; i++) expectError(await call("/api/v1/users", { key }), 401, "api_key_invalid");
    const lookups = d1.matching(/from "?api_key_secrets"?/i);
    d1.stop();
    expect(lookups).toBe(1);
  });

  it("a remembered miss lapses after its time, and the oldest goes first at the bound", () => {
    const misses = new RecentMisses(2, 1_000);
    misses.add("a", 0);
    expect(misses.has("a", 999)).toBe(true);
    expect(misses.has("a", 1_000)).toBe(false);
    // Bounded: the oldest miss goes first.
    misses.add("a", 0);
    misses.add("b", 0);
    misses.add("c", 0);
    expect(misses.size).toBe(2);
    expect(misses.has("a", 1)).toBe(false);
    expect(misses.has("c", 1)).toBe(true);
  });

  it("a dead session cookie costs one D1 lookup per isolate; a live one is never remembered as dead", async () => {
    const t = await makeTenant();
    const s = await internal("/internal/v1/sessions", { method: "POST", body: { user_id: t.agent.id } });
    expect(s.status, s.text).toBe(201);
    const unknown = randomToken();
    const d1 = countD1();
    for (let i = 0; i < 4; i++)
      expectError(await call("/api/v1/media/upload", { body: {}, headers: cookie(unknown) }), 401, "auth_required");
    const live = await call("/api/v1/media/upload", { body: {}, headers: cookie(s.json.token) });
    const lookups = d1.matching(/from "sessions"/i);
    d1.stop();
    expect(lookups).toBe(2);
    expect(live.status, live.text).not.toBe(401);
  });
});
