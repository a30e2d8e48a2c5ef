import { exports } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ERRORS } from "../../src/lib/errors";
import { BASE, call, expectError, makeTenant } from "../support/harness";

describe("errors that explain themselves", () => {
  it("GET /api/v1/errors serves every code of the table, with its status, retry advice and action", async () => {
    const r = await call("/api/v1/errors");
    expect(r.status, r.text).toBe(200);
    const codes = r.json.data.map((e: { code: string }) => e.code);
    expect(codes).toEqual(Object.keys(ERRORS));
    for (const entry of r.json.data) {
      const [status, message] = ERRORS[entry.code as keyof typeof ERRORS];
      expect(entry, entry.code).toMatchObject({ status, message });
      expect(["never", "after_retry_after", "after_change"]).toContain(entry.retry);
      expect(entry.action.length, entry.code).toBeGreaterThan(10);
      expect(entry.doc_url).toBe(`${BASE}/api/v1/docs/errors#${entry.code}`);
    }
    const transient = r.json.data.filter((e: { retry: string }) => e.retry === "after_retry_after");
    expect(transient.map((e: { code: string }) => e.code)).toEqual(
      expect.arrayContaining(["rate_limit_exceeded", "service_unavailable", "idempotency_key_in_progress"]),
    );
  });

  it("every envelope links to its code's entry in the served docs, and the entry exists", async () => {
    const t = await makeTenant();
    const missing = await call("/api/v1/users");
    expectError(missing, 401, "api_key_missing");
    expect(missing.json.error.doc_url).toBe(`${BASE}/api/v1/docs/errors#api_key_missing`);
    const notFound = await call("/api/v1/listings/zzzzzzz", { key: t.key });
    expectError(notFound, 404, "listing_not_found");
    expect(notFound.json.error.doc_url).toBe(`${BASE}/api/v1/docs/errors#listing_not_found`);
    const unmatched = await call("/api/v1/nowhere", { key: t.key });
    expect(unmatched.json.error.doc_url).toBe(`${BASE}/api/v1/docs/errors#request_path_not_found`);

    const page = await exports.default.fetch(new Request(`${BASE}/api/v1/docs/errors`));
    expect(page.status).toBe(200);
    expect(page.headers.get("Content-Type")).toContain("text/html");
    const html = await page.text();
    for (const code of Object.keys(ERRORS)) expect(html, code).toContain(`<tr id="${code}">`);
  });

  it("the catalog is documented as needing no key, and is left out of no operation's security", async () => {
    const doc = (await (await exports.default.fetch(new Request(`${BASE}/api/v1/openapi.json`))).json()) as {
      paths: Record<string, Record<string, { security?: unknown[] }>>;
    };
    expect(doc.paths["/api/v1/errors"]?.get?.security).toEqual([]);
    expect(doc.paths["/api/v1/users"]?.get?.security).toEqual([{ ApiKey: [] }]);
    expect(doc.paths["/api/v1/docs/errors"]).toBeUndefined();
  });
});
