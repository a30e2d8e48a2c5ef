import { describe, expect, it } from "vitest";
import { routes } from "../../src/app";
import { call, expectError, internal, makeListing, makeTenant } from "../support/harness";

describe("unmatched paths and methods follow the spec's wire rules", () => {
  it("a trailing slash is another path: under /api/v1/listings/ it is endpoint_not_in_scope, never 405", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    for (const method of ["GET", "POST", "PATCH", "DELETE", "OPTIONS"]) {
      for (const path of [
        "/api/v1/listings/",
        `/api/v1/listings/${listing.listing_number}/`,
        `/api/v1/listings/${listing.listing_number}/status/`,
        `/api/v1/listings/${listing.listing_number}/sections/floorplan/`,
      ]) {
        const r = await call(path, { key: t.key, method });
        expectError(r, 404, "endpoint_not_in_scope");
        expect(r.headers.get("Allow"), `${method} ${path}`).toBeNull();
      }
    }
  });

  it("every registered path with a trailing slash is a 404 with the code of its prefix", async () => {
    const t = await makeTenant();
    for (const op of routes.operations()) {
      const path = `${op.path.replaceAll(/\{\w+\}/g, "x")}/`;
      const r = op.surface === "public" ? await call(path, { key: t.key }) : await internal(path);
      const code = path.startsWith("/api/v1/listings/") ? "endpoint_not_in_scope" : "request_path_not_found";
      expectError(r, 404, code);
    }
  });

  it("other unmatched paths are request_path_not_found, whatever the method", async () => {
    for (const method of ["GET", "POST", "DELETE", "OPTIONS"]) {
      for (const path of ["/api/v1/users/x/y", "/api/v1/", "/api/v1", "/api/v2/listings", "/API/V1/USERS", "/nope"]) {
        expectError(await call(path, { method }), 404, "request_path_not_found");
      }
    }
  });

  it("any method on an unmatched path under /api/v1/listings/ is endpoint_not_in_scope", async () => {
    for (const method of ["GET", "POST", "PUT", "PATCH", "DELETE"]) {
      expectError(await call("/api/v1/listings/abc1234/photos", { method }), 404, "endpoint_not_in_scope");
      expectError(await call("/api/v1/listings//status", { method }), 404, "endpoint_not_in_scope");
    }
  });

  it("a wrong method on a known path is 405 with Allow and details.methods_allowed, on both surfaces", async () => {
    const listings = await call("/api/v1/listings", { method: "DELETE" });
    expectError(listings, 405, "request_method_not_allowed");
    expect(listings.headers.get("Allow")).toBe("GET, HEAD, OPTIONS, POST");
    expect(listings.json.error.details.methods_allowed).toEqual(["GET", "HEAD", "OPTIONS", "POST"]);
    const status = await call("/api/v1/listings/abc1234/status", { method: "GET" });
    expectError(status, 405, "request_method_not_allowed");
    expect(status.headers.get("Allow")).toBe("OPTIONS, PATCH");
    const agencies = await internal("/internal/v1/agencies", { method: "PUT" });
    expectError(agencies, 405, "request_method_not_allowed");
    expect(agencies.headers.get("Allow")).toBe("GET, HEAD, OPTIONS, POST");
  });
});

describe("validation codes", () => {
  it("an absent required enum is validation_missing_required, on every route with a body", async () => {
    const t = await makeTenant();
    const listing = await makeListing(t);
    const status = await call(`/api/v1/listings/${listing.listing_number}/status`, {
      key: t.key,
      method: "PATCH",
      body: {},
    });
    expectError(status, 422, "validation_missing_required");
    expect(status.json.error.details.errors).toEqual([
      expect.objectContaining({ field: "new_status", code: "validation_missing_required" }),
    ]);
    // No route answers "not one of the allowed values" for a value nobody sent.
    for (const op of routes.operations().filter((o) => o.schemas.json)) {
      const path = op.path.replaceAll(/\{\w+\}/g, "x");
      const opts = { method: op.method.toUpperCase(), body: {} };
      const r = op.surface === "public" ? await call(path, { ...opts, key: t.key }) : await internal(path, opts);
      const walk = (list: any[]): any[] => list.flatMap((e) => [e, ...walk(e.children ?? [])]);
      const errors = walk(r.json?.error?.details?.errors ?? []);
      expect(
        errors.filter((e) => e.code === "validation_enum_not_allowed"),
        `${op.method} ${op.path}: ${r.text}`,
      ).toEqual([]);
    }
  });

  it("a discriminator that is absent is missing, one outside its values is not allowed", async () => {
    const t = await makeTenant();
    const path = `/internal/v1/users/${t.owner.id}/calendar`;
    const absent = await internal(path, { method: "PUT", body: { feed_url: "https://cal.example.com/x.ics" } });
    expectError(absent, 422, "validation_missing_required");
    expect(absent.json.error.details.errors[0].field).toBe("provider");
    const wrong = await internal(path, { method: "PUT", body: { provider: "outlook" } });
    expectError(wrong, 422, "validation_enum_not_allowed");
    expect(wrong.json.error.details.errors[0].ctx.expected).toEqual(["google", "ics"]);
  });

  it("a webhook url that is no URL is validation_string_pattern; a refused one webhook_url_not_allowed", async () => {
    const t = await makeTenant();
    for (const url of ["not a url", "hooks.example.com/alms", "https://", ""]) {
      const r = await call("/api/v1/webhooks/endpoints", { key: t.key, body: { url } });
      expectError(r, 422, "validation_string_pattern");
      expect(r.json.error.details.errors[0].field, url).toBe("url");
    }
    for (const url of ["ftp://hooks.example.com/", "https://10.0.0.1/hook", "https://1572395042/"]) {
      const r = await call("/api/v1/webhooks/endpoints", { key: t.key, body: { url } });
      expectError(r, 422, "webhook_url_not_allowed");
    }
    const doc = (await call("/api/v1/openapi.json")).json;
    expect(doc.components.schemas.CreateWebhookEndpoint.properties.url).toMatchObject({
      type: "string",
      format: "uri",
      maxLength: 2048,
    });
  });
});

describe("the wire form of the limits and the OpenAPI description", () => {
  it("rate-limit headers carry the spec's three-segment names in lowercase, on the wire and in the doc", async () => {
    const t = await makeTenant();
    const r = await call("/api/v1/users", { key: t.key });
    expect(r.headers.get("x-rate-limit-limit")).toBe("300");
    expect(r.headers.get("x-rate-limit-remaining")).toBe("299");
    expect(r.headers.get("x-rate-limit-reset")).toMatch(/^\d+$/);
    const doc = (await call("/api/v1/openapi.json")).json;
    const headers = Object.keys(doc.paths["/api/v1/users"].get.responses["200"].headers);
    expect(headers).toEqual(
      expect.arrayContaining(["x-rate-limit-limit", "x-rate-limit-remaining", "x-rate-limit-reset"]),
    );
    const names = JSON.stringify(doc).match(/"[Xx]-[Rr]ate-[Ll]imit-\w+"/g) ?? [];
    expect(names.filter((n) => n !== n.toLowerCase())).toEqual([]);
  });

  it("the server URL joined with a documented path is the real route", async () => {
    const t = await makeTenant();
    const doc = (await call("/api/v1/openapi.json")).json;
    expect(doc.servers).toEqual([expect.objectContaining({ url: "https://api.test" })]);
    const paths = Object.keys(doc.paths);
    expect(paths.every((p) => p.startsWith("/api/v1/"))).toBe(true);
    const server = new URL(doc.servers[0].url);
    const users = await call(`${server.pathname.replace(/\/$/, "")}/api/v1/users`, { key: t.key });
    expect(users.status, users.text).toBe(200);
    expect(new URL(`${doc.servers[0].url}/api/v1/users`).pathname).toBe("/api/v1/users");
  });

  it("every operation documents its body limit as x-body-limit, the limit it enforces", async () => {
    const doc = (await call("/api/v1/openapi.json")).json;
    const internalDoc = (await internal("/internal/v1/openapi.json")).json;
    for (const op of routes.operations()) {
      if (op.undocumented) continue;
      const d = op.surface === "public" ? doc : internalDoc;
      expect(d.paths[op.path]?.[op.method]?.["x-body-limit"], `${op.method} ${op.path}`).toBe(op.bodyLimit);
    }
    expect(doc.paths["/api/v1/tours"].post["x-body-limit"]).toBe(256 * 1024);
    expect(doc.paths["/api/v1/listings/{listing_number}/sections/floorplan"].patch["x-body-limit"]).toBe(128 * 1024);
    expect(doc.paths["/api/v1/listings"].post["x-body-limit"]).toBe(64 * 1024);
    expect(doc.paths["/api/v1/listings"].get["x-body-limit"]).toBe(1024);
  });
});
