import { describe, expect, it } from "vitest";
import { routes } from "../../src/app";
import { mintKey } from "../../src/domain/api-keys";
import { BASE, db, direct, makeTenant } from "../support/harness";

/** Calls the Worker with environment overrides, as a deployment with those variables would run. */

const LIVE = { API_MODE: "live" } as Partial<Env>;
const helpers = () => routes.operations("public").filter((op) => op.sandboxOnly);
const concrete = (template: string) => template.replaceAll(/\{(\w+)\}/g, (_, name: string) => `${name}_x1`);

/** What the Worker answers for a path no route has, with the same method, key and body. */
async function unknownPath(method: string, path: string, headers: Record<string, string>, body?: string) {
  return direct(new Request(`${BASE}${path}`, { method, headers, body }), LIVE);
}

/** The answer reduced to what must not tell a test helper from an unknown path. */
const shape = (r: { status: number; headers: Headers; json: any }, path: string) => ({
  status: r.status,
  code: r.json?.error?.code,
  message: r.json?.error?.message.replace(path, "<path>"),
  details: r.json?.error?.details,
  allow: r.headers.get("Allow"),
  rateLimit: r.headers.get("X-Rate-Limit-Limit"),
});

describe("test helpers in live mode", () => {
  it("there are test helpers, each sandbox only", () => {
    expect(helpers().length).toBeGreaterThanOrEqual(15);
    for (const op of helpers()) expect(op.path.startsWith("/api/v1/test_helpers/"), op.path).toBe(true);
    const unmarked = routes.operations("public").filter((op) => op.path.startsWith("/api/v1/test_helpers/"));
    expect(unmarked.every((op) => op.sandboxOnly)).toBe(true);
  });

  it("every test-helper path answers exactly like an unknown path, for a live key, no key and any method", async () => {
    const t = await makeTenant();
    const { secret: liveKey } = await mintKey(db(), { agencyId: t.agencyId, mintedByUserId: t.owner.id, mode: "live" });
    expect(liveKey.startsWith("sk_live_")).toBe(true);
    for (const op of helpers()) {
      const path = concrete(op.path);
      const other = `/api/v1/no_such_helper/${path.split("/").slice(4).join("/")}`;
      const cases: { method: string; headers: Record<string, string>; body?: string }[] = [
        {
          method: "POST",
          headers: { "X-API-Key": liveKey, "Content-Type": "application/json", "X-Idempotency-Key": "k1" },
          body: "{}",
        },
        { method: "POST", headers: {} },
        { method: "GET", headers: { "X-API-Key": liveKey } },
        { method: "DELETE", headers: {} },
        { method: "OPTIONS", headers: {} },
      ];
      for (const c of cases) {
        const helper = await direct(
          new Request(`${BASE}${path}`, { method: c.method, headers: c.headers, body: c.body }),
          LIVE,
        );
        const unknown = await unknownPath(c.method, other, c.headers, c.body);
        const label = `${c.method} ${path}: ${helper.text}`;
        expect(helper.status, label).toBe(404);
        expect(helper.json.error.code, label).toBe("request_path_not_found");
        expect(helper.json.error.message, label).toBe(`No route ${c.method} ${path}.`);
        expect(shape(helper, path), label).toEqual(shape(unknown, other));
      }
    }
  });

  it("in the sandbox the same paths exist: a wrong method is 405 and a missing key 401", async () => {
    const path = concrete(helpers()[0]!.path);
    const get = await direct(new Request(`${BASE}${path}`), {});
    expect(get.status, get.text).toBe(405);
    expect(get.headers.get("Allow")).toContain("POST");
    const post = await direct(new Request(`${BASE}${path}`, { method: "POST" }), {});
    expect(post.status, post.text).toBe(401);
    expect(post.json.error.code).toBe("api_key_missing");
    const options = await direct(new Request(`${BASE}${path}`, { method: "OPTIONS" }), {});
    expect(options.status, options.text).toBe(204);
  });

  it(
    "the live description leaves the test helpers out; the sandbox description lists them under " + "Test helpers",
    async () => {
      const live = await direct(new Request(`${BASE}/api/v1/openapi.json`), LIVE);
      const sandbox = await direct(new Request(`${BASE}/api/v1/openapi.json`), {});
      expect(live.status, live.text).toBe(200);
      expect(sandbox.status, sandbox.text).toBe(200);
      const paths = (doc: any) => Object.keys(doc.paths);
      const tags = (doc: any) => (doc.tags as { name: string }[]).map((t) => t.name);
      const operationIds = (doc: any) =>
        Object.values(doc.paths).flatMap((p: any) => Object.values(p).map((o: any) => o.operationId as string));

      expect(paths(live.json).filter((p) => p.includes("test_helpers"))).toEqual([]);
      expect(tags(live.json)).not.toContain("Test helpers");
      expect(operationIds(live.json).filter((id) => id.startsWith("testHelper"))).toEqual([]);
      expect(live.text).not.toContain("/api/v1/test_helpers/");
      // Everything else is the same document.
      expect(paths(live.json).length).toBe(paths(sandbox.json).length - new Set(helpers().map((h) => h.path)).size);

      for (const op of helpers()) {
        const documented = sandbox.json.paths[op.path]?.[op.method];
        expect(documented, `${op.method} ${op.path}`).toBeDefined();
        expect(documented.tags).toEqual(["Test helpers"]);
        expect(documented["x-rate-limit"]).toEqual({ endpoint: "test_helpers", requests_per_60s: 100 });
        expect(documented["x-required-scope"]).toBeDefined();
      }
      expect(tags(sandbox.json)).toContain("Test helpers");
    },
  );
});
