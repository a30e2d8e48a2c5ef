import { describe, expect, it } from "vitest";
import { AlmsError, createClient, isAlmsError } from "../../clients/typescript/src/index.js";
import { envelope, fakeApi, json } from "./fake-api";

const listing = {
  listing_number: "abc1234",
  address: "1 Main Street",
  status: "Coming Soon",
  is_activated: false,
  public_url: "https://site.test/property/abc1234",
  owner_user_id: "usr_1",
  agent_one_id: "usr_2",
  created_at: "2026-11-25T00:00:00.000Z",
};
const create = { address: "1 Main Street", owner_user_id: "usr_1", agent_one_id: "usr_2" };

/** The error a call rejected with. */
async function failure(promise: Promise<unknown>): Promise<AlmsError> {
  const error = await promise.then(
    () => null,
    (e: unknown) => e,
  );
  expect(error, "the call should have failed").toBeInstanceOf(AlmsError);
  return error as AlmsError;
}

describe("the official client's requests", () => {
  it("sends the key everywhere, and a new idempotency key on each mutating call only", async () => {
    const { client, sent } = fakeApi([json(201, listing), json(201, listing), json(200, listing)]);
    await client.post("/api/v1/listings", { body: create });
    await client.post("/api/v1/listings", { body: create });
    const read = await client.get("/api/v1/listings/{listing_number}", { path: { listing_number: "abc 123" } });
    expect(read.listing_number).toBe("abc1234");
    expect(sent.map((r) => r.headers.get("X-API-Key"))).toEqual(["sk_test_unit", "sk_test_unit", "sk_test_unit"]);
    const [first, second, get] = sent.map((r) => r.headers.get("X-Idempotency-Key"));
    expect(first).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).toMatch(/^[0-9a-f-]{36}$/);
    expect(second).not.toBe(first);
    expect(get).toBeNull();
    expect(sent[0]).toMatchObject({
      method: "POST",
      url: "https://api.test/api/v1/listings",
      body: JSON.stringify(create),
    });
    expect(sent[0]!.headers.get("Content-Type")).toBe("application/json");
    expect(sent[2]).toMatchObject({ method: "GET", url: "https://api.test/api/v1/listings/abc%20123", body: "" });
  });

  it("uses a given idempotency key, and sends the query without undefined values", async () => {
    const { client, sent } = fakeApi([json(200, listing), json(200, { data: [], next_cursor: "" })]);
    await client.patch("/api/v1/listings/{listing_number}/status", {
      path: { listing_number: "abc1234" },
      body: { new_status: "Active" },
      idempotencyKey: "my-key-1",
    });
    await client.get("/api/v1/listings", { query: { limit: 5, cursor: undefined } });
    expect(sent[0]!.headers.get("X-Idempotency-Key")).toBe("my-key-1");
    expect(sent[1]!.url).toBe("https://api.test/api/v1/listings?limit=5");
  });

  it("is typed from the OpenAPI description: tsc refuses a wrong body, a missing parameter, an unknown path", () => {
    const { client, sent } = fakeApi([]);
    const neverCalled = () => [
      // @ts-expect-error: address is a string
      client.post("/api/v1/listings", { body: { ...create, address: 1 } }),
      // @ts-expect-error: the path parameter is required
      client.get("/api/v1/listings/{listing_number}"),
      // @ts-expect-error: no such path
      client.get("/api/v1/nowhere"),
      // @ts-expect-error: GET takes no body
      client.get("/api/v1/users", { body: {} }),
    ];
    expect(neverCalled).toBeTypeOf("function");
    expect(sent).toHaveLength(0);
  });

  it("returns the response with send: replays and request ids are visible", async () => {
    const { client } = fakeApi([json(201, listing, { "X-Idempotent-Replay": "true", "X-Request-Id": "req_2" })]);
    const answer = await client.send("post", "/api/v1/listings", { body: create });
    expect(answer.data).toEqual(listing);
    expect(answer.response.headers.get("X-Idempotent-Replay")).toBe("true");
    expect(answer.attempts).toBe(1);
  });
});

describe("the official client's retries", () => {
  it("retries a 429 after Retry-After plus jitter, with the same idempotency key", async () => {
    const { client, sent, waits } = fakeApi([
      envelope(429, "rate_limit_exceeded", { "Retry-After": "7" }),
      json(201, listing),
    ]);
    expect(await client.post("/api/v1/listings", { body: create })).toEqual(listing);
    expect(waits).toEqual([7000 + 2500]);
    expect(sent).toHaveLength(2);
    expect(sent[1]!.headers.get("X-Idempotency-Key")).toBe(sent[0]!.headers.get("X-Idempotency-Key"));
    expect(sent[1]!.body).toBe(sent[0]!.body);
  });

  it("retries a 503 and a 409 idempotency_key_in_progress after their Retry-After", async () => {
    const { client, sent, waits } = fakeApi([
      envelope(503, "queue_unavailable", { "Retry-After": "2" }),
      envelope(409, "idempotency_key_in_progress", { "Retry-After": "5" }),
      json(201, listing),
    ]);
    const answer = await client.send("post", "/api/v1/listings", { body: create });
    expect(answer.attempts).toBe(3);
    expect(waits).toEqual([4500, 7500]);
    expect(new Set(sent.map((r) => r.headers.get("X-Idempotency-Key"))).size).toBe(1);
  });

  it("retries a 500 internal_error and a lost connection with the same key, after a doubling backoff", async () => {
    const { client, sent, waits } = fakeApi([
      envelope(500, "internal_error"),
      new TypeError("fetch failed"),
      json(201, listing),
    ]);
    expect((await client.send("post", "/api/v1/listings", { body: create })).attempts).toBe(3);
    expect(waits).toEqual([500, 1000]);
    expect(new Set(sent.map((r) => r.headers.get("X-Idempotency-Key"))).size).toBe(1);
  });

  it("retries the calendar's 502 and 504 after a backoff", async () => {
    const { client, sent, waits } = fakeApi([
      envelope(502, "calendar_provider_error"),
      envelope(504, "calendar_provider_timeout"),
      json(200, { slots: [] }),
    ]);
    const query = { from: "2026-11-30T00:00:00Z", to: "2026-12-01T00:00:00Z" };
    expect((await client.send("get", "/api/v1/scheduling/availability", { query })).attempts).toBe(3);
    expect(waits).toEqual([500, 1000]);
    expect(sent.every((r) => r.headers.get("X-Idempotency-Key") === null)).toBe(true);
  });

  it("gives up after maxAttempts and throws the last error with its attempt count", async () => {
    const { client, sent } = fakeApi([
      envelope(503, "service_unavailable", { "Retry-After": "1" }),
      envelope(503, "service_unavailable", { "Retry-After": "1" }),
      envelope(503, "service_unavailable", { "Retry-After": "1" }),
      json(201, listing),
    ]);
    const error = await failure(client.post("/api/v1/listings", { body: create }));
    expect(error).toMatchObject({ status: 503, code: "service_unavailable", attempts: 3, retryAfter: 1 });
    expect(sent).toHaveLength(3);
  });

  it("does not wait for a Retry-After above maxRetryAfterSeconds", async () => {
    const { client, waits } = fakeApi([envelope(429, "rate_limit_exceeded", { "Retry-After": "3600" })]);
    const error = await failure(client.get("/api/v1/listings"));
    expect(error).toMatchObject({ code: "rate_limit_exceeded", retryAfter: 3600, attempts: 1 });
    expect(waits).toEqual([]);
  });

  it("never retries an answer: a 4xx, a conflict, another 500", async () => {
    for (const [status, code] of [
      [422, "validation_unknown_field"],
      [409, "idempotency_key_conflict"],
      [409, "no_op_transition"],
      [500, "rate_limit_misconfigured"],
    ] as const) {
      const { client, sent } = fakeApi([envelope(status, code), json(201, listing)]);
      const error = await failure(client.post("/api/v1/listings", { body: create }));
      expect(error.code).toBe(code);
      expect(sent, code).toHaveLength(1);
    }
  });

  it("turns retries off with maxAttempts 1", async () => {
    const sent: Request[] = [];
    const client = createClient({
      baseUrl: "https://api.test",
      apiKey: "sk_test_unit",
      retry: { maxAttempts: 1 },
      fetch: async (req) => {
        sent.push(req);
        return envelope(503, "service_unavailable", { "Retry-After": "1" });
      },
    });
    expect((await failure(client.get("/api/v1/users"))).attempts).toBe(1);
    expect(sent).toHaveLength(1);
  });
});

describe("the official client's errors", () => {
  it("carries code, message, doc_url, request_id, details and status", async () => {
    const { client } = fakeApi([envelope(404, "listing_not_found")]);
    const error = await failure(
      client.get("/api/v1/listings/{listing_number}", { path: { listing_number: "zzz9999" } }),
    );
    expect(error).toMatchObject({
      name: "AlmsError",
      status: 404,
      code: "listing_not_found",
      message: "message of listing_not_found",
      doc_url: "https://api.test/api/v1/docs/errors#listing_not_found",
      request_id: "req_listing_not_found",
      details: { hint: "listing_not_found" },
      retryAfter: null,
    });
    expect(isAlmsError(error, "listing_not_found")).toBe(true);
    expect(isAlmsError(error, "user_not_found")).toBe(false);
    expect(isAlmsError(new Error("x"))).toBe(false);
  });

  it("names an answer without the envelope unexpected_response, with the X-Request-Id", async () => {
    const { client } = fakeApi([
      new Response("<h1>Forbidden by the proxy</h1>", { status: 403, headers: { "X-Request-Id": "r9" } }),
    ]);
    const error = await failure(client.get("/api/v1/users"));
    expect(error).toMatchObject({ status: 403, code: "unexpected_response", request_id: "r9", doc_url: "" });
    expect(error.message).toContain("Forbidden by the proxy");
  });

  it("refuses a call missing a path parameter before sending it", async () => {
    const { client, sent } = fakeApi([]);
    await expect(client.get("/api/v1/users/{user_id}", { path: { user_id: "" } })).rejects.toThrow(
      /Missing path parameter user_id/,
    );
    expect(sent).toHaveLength(0);
  });
});

describe("the official client's pages", () => {
  it("iterates a cursor list page after page until next_cursor is empty", async () => {
    const page = (numbers: string[], next: string) =>
      json(200, { data: numbers.map((n) => ({ ...listing, listing_number: n })), next_cursor: next });
    const { client, sent } = fakeApi([page(["a000001", "a000002"], "c1"), page(["a000003"], "c2"), page([], "")]);
    const seen: string[] = [];
    for await (const item of client.paginate("/api/v1/listings", { query: { limit: 2 } }))
      seen.push(item.listing_number);
    expect(seen).toEqual(["a000001", "a000002", "a000003"]);
    expect(sent.map((r) => new URL(r.url).search)).toEqual(["?limit=2", "?limit=2&cursor=c1", "?limit=2&cursor=c2"]);
  });

  it("stops with an error past maxPages and on a repeated cursor", async () => {
    const { client } = fakeApi([
      json(200, { data: [], next_cursor: "c1" }),
      json(200, { data: [], next_cursor: "c2" }),
    ]);
    const iterate = async (it: AsyncIterable<unknown>) => {
      for await (const _ of it);
    };
    await expect(iterate(client.paginate("/api/v1/users", { maxPages: 2 }))).rejects.toThrow(/more than 2 pages/);
    const again = fakeApi([json(200, { data: [], next_cursor: "c1" }), json(200, { data: [], next_cursor: "c1" })]);
    await expect(iterate(again.client.paginate("/api/v1/users"))).rejects.toThrow(/same cursor twice/);
  });

  it("iterates the numbered tour pages from page 1 to the last", async () => {
    const tour = (n: number) => ({ id: `t${n}`, tour_number: `T${n}`, address: `${n} Road` });
    const { client, sent } = fakeApi([
      json(200, { tours: [tour(1), tour(2)], total: 3, page: 1, pages: 2 }),
      json(200, { tours: [tour(3)], total: 3, page: 2, pages: 2 }),
    ]);
    const seen: string[] = [];
    for await (const t of client.pages("/api/v1/tours", "tours", { query: { limit: 2, status: "active" } }))
      seen.push(t.tour_number);
    expect(seen).toEqual(["T1", "T2", "T3"]);
    expect(sent.map((r) => new URL(r.url).search)).toEqual([
      "?limit=2&status=active&page=1",
      "?limit=2&status=active&page=2",
    ]);
  });

  it("passes errors of a later page through, after retrying it", async () => {
    const { client, waits } = fakeApi([
      json(200, { data: [{ ...listing }], next_cursor: "c1" }),
      envelope(429, "rate_limit_exceeded", { "Retry-After": "1" }),
      envelope(422, "request_query_invalid"),
    ]);
    const seen: unknown[] = [];
    const iterate = async () => {
      for await (const item of client.paginate("/api/v1/listings")) seen.push(item);
    };
    expect((await failure(iterate())).code).toBe("request_query_invalid");
    expect(seen).toHaveLength(1);
    expect(waits).toEqual([3500]);
  });
});
