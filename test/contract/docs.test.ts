import { describe, expect, it } from "vitest";
import { call, expectError } from "../support/harness";

const SCRIPT_PATH = "/api/v1/docs/reference.js";

/** The script URL the page points at, with its version. */
async function scriptUrl(): Promise<string> {
  const page = await call("/api/v1/docs");
  expect(page.status, page.text).toBe(200);
  const srcs = [...page.text.matchAll(/<script[^>]*\ssrc="([^"]+)"/g)].map((m) => m[1]!);
  expect(srcs, page.text).toHaveLength(1);
  return srcs[0]!;
}

describe("the API reference page", () => {
  it("loads its script from the Worker, not from another host", async () => {
    const page = await call("/api/v1/docs");
    expect(page.status, page.text).toBe(200);
    expect(page.headers.get("Content-Type")).toMatch(/^text\/html/);
    expect(page.text).toContain('"url": "/api/v1/openapi.json"');
    expect(page.text).toContain('"withDefaultFonts": false');
    expect(page.text, page.text).not.toMatch(/https?:\/\//);
    expect(await scriptUrl()).toMatch(/^\/api\/v1\/docs\/reference\.js\?v=[0-9a-f]{16}$/);
  });

  it("serves the script as JavaScript, cached for good under its version", async () => {
    const url = await scriptUrl();
    const r = await call(url);
    expect(r.status).toBe(200);
    expect(r.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(r.headers.get("Cache-Control")).toBe("public, max-age=31536000, immutable");
    expect(r.headers.get("ETag")).toBe(`"${new URL(url, "https://x").searchParams.get("v")}"`);
    expect(r.headers.get("X-Request-Id")).toMatch(/^req_/);
    expect(Number(r.headers.get("Content-Length"))).toBe(new TextEncoder().encode(r.text).byteLength);
    expect(r.text).toContain("window.Scalar={createApiReference:");
    expect(r.text.length).toBeGreaterThan(1_000_000);
  });

  it("revalidates the script when asked without the current version", async () => {
    for (const path of [SCRIPT_PATH, `${SCRIPT_PATH}?v=0000000000000000`]) {
      const r = await call(path);
      expect(r.status, path).toBe(200);
      expect(r.headers.get("Cache-Control"), path).toBe("public, no-cache");
    }
  });

  it("answers 304 to a matching If-None-Match", async () => {
    const etag = (await call(SCRIPT_PATH)).headers.get("ETag")!;
    for (const header of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const r = await call(SCRIPT_PATH, { headers: { "If-None-Match": header } });
      expect(r.status, header).toBe(304);
      expect(r.text, header).toBe("");
      expect(r.headers.get("ETag"), header).toBe(etag);
    }
    expect((await call(SCRIPT_PATH, { headers: { "If-None-Match": '"other"' } })).status).toBe(200);
  });

  it("answers HEAD like GET, without a body", async () => {
    const r = await call(await scriptUrl(), { method: "HEAD" });
    expect(r.status).toBe(200);
    expect(r.text).toBe("");
    expect(r.headers.get("Content-Type")).toBe("text/javascript; charset=utf-8");
    expect(Number(r.headers.get("Content-Length"))).toBeGreaterThan(1_000_000);
    expect((await call("/api/v1/docs", { method: "HEAD" })).status).toBe(200);
  });

  it("is a known path: OPTIONS lists its methods, others are refused", async () => {
    const r = await call(SCRIPT_PATH, { method: "OPTIONS" });
    expect(r.status, r.text).toBe(204);
    expect(r.headers.get("Allow")).toBe("GET, HEAD, OPTIONS");
    expectError(await call(SCRIPT_PATH, { method: "DELETE" }), 405, "request_method_not_allowed");
  });

  it("stays out of the OpenAPI document", async () => {
    const doc = await call("/api/v1/openapi.json");
    expect(doc.status, doc.text).toBe(200);
    expect(Object.keys(doc.json.paths).filter((p) => p.startsWith("/api/v1/docs"))).toEqual([]);
  });
});
