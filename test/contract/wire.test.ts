import { env } from "cloudflare:workers";
import { eq } from "drizzle-orm";
import { describe, expect, it } from "vitest";
import { agencies } from "../../src/db/schema";
import {
  BASE,
  call,
  captureErrorLogs,
  db,
  direct,
  expectError,
  internal,
  makeTenant,
  outbox,
  unique,
} from "../support/harness";

describe("the envelope and request ids", () => {
  it("every response carries X-Request-Id, success or error, each one unique", async () => {
    const t = await makeTenant();
    const ok = await call("/api/v1/users", { key: t.key });
    const err = await call("/api/v1/users");
    expect(ok.headers.get("X-Request-Id")).toMatch(/^req_[a-z0-9]+$/);
    expectError(err, 401, "api_key_missing");
    expect(err.headers.get("X-Request-Id")).not.toBe(ok.headers.get("X-Request-Id"));
    expect(err.json.error.details).toEqual({});
  });
});

describe("routing", () => {
  it("an unknown path under /api/v1/listings/ is endpoint_not_in_scope", async () => {
    expectError(await call("/api/v1/listings/abc1234/photos/5"), 404, "endpoint_not_in_scope");
  });

  it("any other unknown path is request_path_not_found", async () => {
    expectError(await call("/api/v1/nothing-here"), 404, "request_path_not_found");
    expectError(await call("/"), 404, "request_path_not_found");
  });

  it("a mistyped path is answered with did_you_mean, the path's own values kept", async () => {
    const listing = await call("/api/v1/listing");
    expectError(listing, 404, "request_path_not_found");
    expect(listing.json.error.details.did_you_mean).toEqual(["/api/v1/listings"]);
    expect(listing.json.error.message).toContain("Did you mean /api/v1/listings?");
    const tour = await call("/api/v1/tuors/q7x2m9ka");
    expect(tour.json.error.details.did_you_mean).toEqual(["/api/v1/tours/q7x2m9ka"]);
    const status = await call("/api/v1/listings/k3v9x2a/stauts", { method: "PATCH", body: {} });
    expectError(status, 404, "endpoint_not_in_scope");
    expect(status.json.error.details.did_you_mean).toEqual(["/api/v1/listings/k3v9x2a/status"]);
    // Nothing near: no suggestion; and the internal surface is never suggested from the public one.
    expect((await call("/api/v1/nothing-here")).json.error.details).toEqual({});
    expect((await call("/api/v1/usage")).json.error.details).toEqual({});
  });

  it("a wrong method is 405 with Allow and details.methods_allowed", async () => {
    const r = await call("/api/v1/users", { method: "DELETE" });
    expectError(r, 405, "request_method_not_allowed");
    expect(r.headers.get("Allow")).toBe("GET, HEAD, OPTIONS");
    expect(r.json.error.details.methods_allowed).toEqual(["GET", "HEAD", "OPTIONS"]);
  });

  it("OPTIONS on a known path answers 204 with Allow", async () => {
    const r = await call("/api/v1/users/usr_x", { method: "OPTIONS" });
    expect(r.status, r.text).toBe(204);
    expect(r.headers.get("Allow")).toContain("GET");
  });

  it("HEAD is answered like GET, without a body", async () => {
    const t = await makeTenant();
    const r = await call("/api/v1/users", { method: "HEAD", key: t.key });
    expect(r.status).toBe(200);
    expect(r.text).toBe("");
  });
});

describe("request bodies", () => {
  const post = (rawBody: string | undefined, headers: Record<string, string>) =>
    internal("/internal/v1/agencies", { method: "POST", rawBody, headers });

  it("an empty body is request_body_empty", async () => {
    expectError(await post(undefined, { "Content-Type": "application/json" }), 400, "request_body_empty");
    expectError(await post("   ", { "Content-Type": "application/json" }), 400, "request_body_empty");
  });

  it("a non-JSON content type is request_content_type_mismatch", async () => {
    const r = await post("name=x", { "Content-Type": "application/x-www-form-urlencoded" });
    expectError(r, 415, "request_content_type_mismatch");
    expect(r.json.error.details.received).toBe("application/x-www-form-urlencoded");
  });

  it("broken JSON is request_body_not_json with the parse position", async () => {
    const r = await post('{"name": "x",, "kind": "broker"}', { "Content-Type": "application/json" });
    expectError(r, 400, "request_body_not_json");
    expect(r.json.error.details.parse_error_position).toBe(13);
  });

  it("truncated JSON points at its end", async () => {
    const body = '{"name": "x"';
    const r = await post(body, { "Content-Type": "application/json" });
    expectError(r, 400, "request_body_not_json");
    expect(r.json.error.details.parse_error_position).toBe(body.length);
  });

  it("a body above the limit is request_body_too_large, and nothing is stored", async () => {
    // A valid body padded past the limit with whitespace: only the size check can refuse it.
    const name = unique("padded");
    const body = JSON.stringify({ name, kind: "broker" });
    const stored = () => db().select().from(agencies).where(eq(agencies.name, name)).all();
    const r = await post(body + " ".repeat(65536 - body.length + 1), { "Content-Type": "application/json" });
    expectError(r, 413, "request_body_too_large");
    expect(r.json.error.details.limit_bytes).toBe(65536);
    expect(await stored()).toEqual([]);
    // The same body at exactly the limit is stored: the check above is the size, not the content.
    const atLimit = await post(body + " ".repeat(65536 - body.length), { "Content-Type": "application/json" });
    expect(atLimit.status, atLimit.text).toBe(201);
    expect(await stored()).toHaveLength(1);
  });

  it("a charset parameter on the JSON media type is accepted", async () => {
    const r = await post(JSON.stringify({ name: "Charset Co", kind: "broker" }), {
      "Content-Type": "application/json; charset=utf-8",
    });
    expect(r.status, r.text).toBe(201);
  });
});

describe("reserved routes", () => {
  it("a reserved route answers 501 not_implemented after authentication", async () => {
    expectError(await call("/api/v1/scheduling/appointments", { method: "POST" }), 401, "api_key_missing");
    const t = await makeTenant();
    const r = await call("/api/v1/scheduling/appointments", { method: "POST", key: t.key });
    expectError(r, 501, "not_implemented");
  });
});

describe("deployed environments", () => {
  it("plain HTTP is refused before the key is read", async () => {
    const req = new Request("http://api.test/api/v1/users", { headers: { "X-API-Key": "not-even-a-key" } });
    const r = await direct(req, { ENVIRONMENT: "sandbox" });
    expect(r.status, r.text).toBe(403);
    expect(r.json.error.code).toBe("https_required");
    expect(r.headers.get("X-Request-Id")).toBe(r.json.error.request_id);
  });

  it("the request URL's scheme decides: a client-sent CF-Visitor cannot make plain HTTP pass", async () => {
    const t = await makeTenant();
    for (const ENVIRONMENT of ["sandbox", "live"] as const) {
      const spoofed = await direct(
        new Request("http://api.test/api/v1/users", {
          headers: { "X-API-Key": t.key, "CF-Visitor": '{"scheme":"https"}' },
        }),
        { ENVIRONMENT, API_MODE: "test" },
      );
      expect(spoofed.status, spoofed.text).toBe(403);
      expect(spoofed.json.error.code).toBe("https_required");
    }
    // Over https, the header changes nothing either way.
    const viaHttps = await direct(
      new Request("https://api.test/api/v1/users", {
        headers: { "X-API-Key": t.key, "CF-Visitor": '{"scheme":"http"}' },
      }),
      { ENVIRONMENT: "sandbox" },
    );
    expect(viaHttps.status, viaHttps.text).toBe(200);
  });

  it("the key is never read from the query string or body", async () => {
    const t = await makeTenant();
    expectError(await call(`/api/v1/users?api_key=${t.key}`), 401, "api_key_missing");
    expectError(await call(`/api/v1/users?X-API-Key=${t.key}`), 401, "api_key_missing");
  });
});

describe("unexpected failures", () => {
  it("are internal_error in the envelope, with no stack or internals", async () => {
    const t = await makeTenant();
    const broken = {
      prepare() {
        throw new Error("D1_ERROR: secret internal detail at /src/db/client.ts:12");
      },
      batch() {
        throw new Error("boom");
      },
    };
    const logs = captureErrorLogs();
    const r = await direct(new Request(`${BASE}/api/v1/users`, { headers: { "X-API-Key": t.key } }), {
      DB: broken as unknown as D1Database,
    });
    expect(r.status, r.text).toBe(500);
    expect(r.json.error.code).toBe("internal_error");
    expect(r.text).not.toMatch(/secret internal detail|client\.ts|at \//);
    expect(r.headers.get("Content-Type")).toContain("application/json");
    // What the client is not shown is logged for the operator, under the same request id.
    expect(logs).toEqual([
      expect.objectContaining({
        console: "error",
        level: "error",
        request_id: r.headers.get("X-Request-Id"),
        path: "/api/v1/users",
        error: expect.stringContaining("secret internal detail"),
      }),
    ]);
  });
});

/** The D1 binding, with `batch` failing as `failure` says until `failures` runs out. */
function flakyBatches(failure: () => Error, failures = Number.POSITIVE_INFINITY): D1Database {
  let left = failures;
  return new Proxy(env.DB, {
    get(target, prop, receiver: D1Database) {
      // A request's D1 session runs on this binding too.
      if (prop === "withSession") {
        return () => ({
          prepare: (sql: string) => receiver.prepare(sql),
          batch: (statements: D1PreparedStatement[]) => receiver.batch(statements),
          getBookmark: () => null,
        });
      }
      if (prop === "batch" && left > 0) {
        return async () => {
          left--;
          throw failure();
        };
      }
      const value = Reflect.get(target, prop);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
}

/** The warning a transient failure leaves for the operator: a 503 is expected, so it is not an error. */
const transientLog = (refused: { headers: Headers }, message: string) =>
  expect.objectContaining({
    console: "warn",
    level: "warn",
    request_id: refused.headers.get("X-Request-Id"),
    path: "/api/v1/listings",
    error: `Error: ${message}`,
  });

describe("transient failures of D1 and Durable Objects", () => {
  const createListing = (t: Awaited<ReturnType<typeof makeTenant>>, idempotencyKey: string) =>
    new Request(`${BASE}/api/v1/listings`, {
      method: "POST",
      headers: { "X-API-Key": t.key, "Content-Type": "application/json", "X-Idempotency-Key": idempotencyKey },
      body: JSON.stringify({ address: "1 Fault Lane", owner_user_id: t.owner.id, agent_one_id: t.agent.id }),
    });

  it("a dropped D1 connection is 503 service_unavailable with Retry-After, and nothing is half-written", async () => {
    const t = await makeTenant();
    const logs = captureErrorLogs();
    const DB = flakyBatches(() => new Error("D1_ERROR: Network connection lost."));
    const refused = await direct(createListing(t, "fault-1"), { DB });
    expectError(refused, 503, "service_unavailable");
    expect(refused.headers.get("Retry-After")).toBe("2");
    expect(logs).toEqual([transientLog(refused, "D1_ERROR: Network connection lost.")]);
    expect((await outbox(t.agencyId, "listing.created")).length).toBe(0);
    const list = await call("/api/v1/listings", { key: t.key });
    expect(list.json.data, list.text).toEqual([]);

    // A later try with the same idempotency key completes the work, once.
    const retried = await direct(createListing(t, "fault-1"), {});
    expect(retried.status, retried.text).toBe(201);
    expect((await outbox(t.agencyId, "listing.created")).length).toBe(1);
  });

  it("an overloaded object asks for a longer pause", async () => {
    const t = await makeTenant();
    const overloaded = () => Object.assign(new Error("Durable Object is overloaded."), { overloaded: true });
    const logs = captureErrorLogs();
    const refused = await direct(createListing(t, "fault-2"), { DB: flakyBatches(overloaded) });
    expectError(refused, 503, "service_unavailable");
    expect(refused.headers.get("Retry-After")).toBe("10");
    expect(logs).toEqual([transientLog(refused, "Durable Object is overloaded.")]);
  });

  it("an error that is not transient stays internal_error", async () => {
    const t = await makeTenant();
    const logs = captureErrorLogs();
    const refused = await direct(createListing(t, "fault-3"), { DB: flakyBatches(() => new Error("no such column")) });
    expectError(refused, 500, "internal_error");
    expect(refused.headers.get("Retry-After")).toBeNull();
    expect(logs).toEqual([
      expect.objectContaining({
        console: "error",
        level: "error",
        request_id: refused.headers.get("X-Request-Id"),
        error: "Error: no such column",
      }),
    ]);
  });
});
