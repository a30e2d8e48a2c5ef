import { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { validationError, withRenames } from "../../src/http/validation";
import { call, expectError, internal, makeTenant, unique } from "../support/harness";

const createUser = (body: unknown) => internal("/internal/v1/users", { method: "POST", body });

describe("body validation codes", () => {
  it("validation_missing_required for an absent field", async () => {
    const r = await createUser({ role: "agent", name: "A" });
    expectError(r, 422, "validation_missing_required");
    expect(r.json.error.details.errors).toEqual([
      expect.objectContaining({ field: "email", code: "validation_missing_required" }),
    ]);
  });

  it("validation_type_mismatch for a present field of the wrong JSON type", async () => {
    const r = await createUser({ role: "agent", name: 42, email: "a@example.test" });
    expectError(r, 422, "validation_type_mismatch");
    expect(r.json.error.details.errors[0]).toMatchObject({
      field: "name",
      ctx: { expected: "string", received: "integer" },
    });
  });

  it("validation_unknown_field with did_you_mean", async () => {
    const r = await createUser({ role: "agent", name: "A", email: "a@example.test", emial: "x" });
    expectError(r, 422, "validation_unknown_field");
    expect(r.json.error.details.errors[0]).toMatchObject({ field: "emial", did_you_mean: ["email"] });
  });

  it("validation_enum_not_allowed suggests the value meant, and says where a value left out on purpose goes", async () => {
    const t = await makeTenant();
    const l = await call("/api/v1/listings", {
      key: t.key,
      body: { address: "3 Enum Street", owner_user_id: t.owner.id, agent_one_id: t.agent.id },
    });
    expect(l.status, l.text).toBe(201);
    const path = `/api/v1/listings/${l.json.listing_number}/status`;
    const typo = await call(path, { key: t.key, method: "PATCH", body: { new_status: "sold" } });
    expectError(typo, 422, "validation_enum_not_allowed");
    expect(typo.json.error.details.errors[0]).toMatchObject({ field: "new_status", did_you_mean: ["Sold"] });
    const cancel = await call(path, { key: t.key, method: "PATCH", body: { new_status: "Cancelled" } });
    expectError(cancel, 422, "validation_enum_not_allowed");
    expect(cancel.json.error.details.errors[0].message).toContain("/cancel");
    expect(cancel.json.error.details.errors[0].did_you_mean).toBeUndefined();
  });

  it("validation_deprecated_field names the new field in migration.to", async () => {
    const r = await createUser({ role: "agent", name: "A", email: "a@example.test", managerId: "usr_x" });
    expectError(r, 422, "validation_deprecated_field");
    expect(r.json.error.details.errors[0]).toMatchObject({
      field: "managerId",
      migration: { from: "managerId", to: "manager_id" },
    });
  });

  it("validation_enum_not_allowed lists the expected values (case-sensitive)", async () => {
    const r = await createUser({ role: "Agent", name: "A", email: "a@example.test" });
    expectError(r, 422, "validation_enum_not_allowed");
    expect(r.json.error.details.errors[0].ctx.expected).toContain("agent");
  });

  it("validation_string_pattern for a malformed format", async () => {
    const r = await createUser({ role: "agent", name: "A", email: "not-an-email" });
    expectError(r, 422, "validation_string_pattern");
    expect(r.json.error.details.errors[0]).toMatchObject({
      field: "email",
      message: "Expected an email address, like name@example.com.",
      ctx: { format: "email", expected: "an email address", example: "name@example.com" },
    });
    expect(r.json.error.details.errors[0].ctx.pattern).toBeUndefined();
  });

  it("validation_out_of_range carries the bound", async () => {
    const r = await internal("/internal/v1/agencies", {
      method: "POST",
      body: { name: "X", kind: "broker", cancellation_notice_hours: 721 },
    });
    expectError(r, 422, "validation_out_of_range");
    expect(r.json.error.details.errors[0]).toMatchObject({ field: "cancellation_notice_hours", ctx: { maximum: 720 } });
  });

  it("validation_array_length for a list that is too short", async () => {
    const t = await makeTenant();
    const r = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: t.owner.id, scopes: [] },
    });
    expectError(r, 422, "validation_array_length");
    expect(r.json.error.details.errors[0]).toMatchObject({ field: "scopes", ctx: { minimum: 1 } });
  });

  it("validation_nested_error groups problems inside a field as children", async () => {
    const t = await makeTenant();
    const r = await internal("/internal/v1/api-keys", {
      method: "POST",
      body: { agency_id: t.agencyId, minted_by_user_id: t.owner.id, scopes: ["users:read", "everything"] },
    });
    expectError(r, 422, "validation_nested_error");
    expect(r.json.error.details.errors).toEqual([
      expect.objectContaining({
        field: "scopes",
        code: "validation_nested_error",
        children: [expect.objectContaining({ field: "scopes[1]", code: "validation_enum_not_allowed" })],
      }),
    ]);
  });

  it("validation.failed when problems of several kinds are found, with details.fields", async () => {
    const r = await createUser({ role: "chief", name: 1 });
    expectError(r, 422, "validation.failed");
    expect(Object.keys(r.json.error.details.fields).sort()).toEqual(["email", "name", "role"]);
    expect(r.json.error.details.errors.map((e: { code: string }) => e.code).sort()).toEqual([
      "validation_enum_not_allowed",
      "validation_missing_required",
      "validation_type_mismatch",
    ]);
  });

  it("a body that is JSON but not an object is a type mismatch at the root", async () => {
    const r = await internal("/internal/v1/agencies", {
      method: "POST",
      rawBody: "[1,2]",
      headers: { "Content-Type": "application/json" },
    });
    expectError(r, 422, "validation_type_mismatch");
  });

  it("a failed validation stores nothing", async () => {
    const email = `${unique("nobody")}@example.test`;
    const t = await makeTenant();
    await createUser({ manager_id: t.owner.id, role: "agent", name: 5, email });
    const list = await call("/api/v1/users?limit=200", { key: t.key });
    expect(list.json.data.some((u: { email: string }) => u.email === email)).toBe(false);
  });
});

describe("nested objects (mapping unit)", () => {
  const schema = z.strictObject({
    address: z.strictObject({
      street: z.string(),
      zip: z
        .string()
        .regex(/^\d{5}$/, "five digits")
        .openapi({ example: "94103" }),
    }),
    tags: z.array(z.string()).max(2),
  });

  it("reports each nested problem under its top-level field, with the shape expected", () => {
    const input = { address: { street: 1, zip: "abc", stret: "x" }, tags: ["a", "b", "c"] };
    const result = schema.safeParse(input);
    const err = validationError("json", result.error!, schema, input);
    expect(err.code).toBe("validation.failed");
    const address = (err.details.errors as any[]).find((e) => e.field === "address");
    expect(address.code).toBe("validation_nested_error");
    expect(address.children).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ field: "address.street", code: "validation_type_mismatch" }),
        expect.objectContaining({
          field: "address.zip",
          code: "validation_string_pattern",
          message: "Expected five digits, like 94103.",
          ctx: { format: "regex", expected: "five digits", example: "94103", pattern: "^\\d{5}$" },
        }),
        expect.objectContaining({ field: "address.stret", code: "validation_unknown_field", did_you_mean: ["street"] }),
      ]),
    );
    expect((err.details.errors as any[]).find((e) => e.field === "tags")).toMatchObject({
      code: "validation_array_length",
      ctx: { maximum: 2 },
    });
  });

  it("renames registered on a nested object apply there", () => {
    const inner = withRenames(z.strictObject({ zipcode: z.string() }), { zip: "zipcode" });
    const outer = z.strictObject({ address: inner });
    const input = { address: { zip: "12345" } };
    const err = validationError("json", outer.safeParse(input).error!, outer, input);
    expect((err.details.errors as any[])[0].children).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          field: "address.zip",
          code: "validation_deprecated_field",
          migration: { from: "zip", to: "zipcode" },
        }),
      ]),
    );
  });
});

/** A body that quotes a regex: the source of the datetime, email or any `.regex()` check. */
const quotesRegex = (text: string) => /\\d|\[a-z|\(\?:|\{\d|\^\(|\$\//.test(text);

describe("a malformed string is told in words with an example, never as a regex in its message", () => {
  it("a datetime without an offset names the shape with an offset", async () => {
    const t = await makeTenant();
    const r = await call("/api/v1/scheduling/availability?from=2026-03-09T09:00:00&to=2026-03-10T09:00:00Z", {
      key: t.key,
    });
    expectError(r, 422, "request_query_invalid");
    const shape = "an ISO 8601 date-time with an offset, like 2026-03-09T09:00:00Z or 2026-03-09T09:00:00-07:00";
    expect(r.json.error.details.errors, r.text).toEqual([
      {
        field: "from",
        code: "validation_string_pattern",
        message: `Expected ${shape}.`,
        ctx: {
          format: "datetime",
          expected: "an ISO 8601 date-time with an offset",
          example: "2026-03-09T09:00:00Z or 2026-03-09T09:00:00-07:00",
        },
      },
    ]);
    expect(r.json.error.message).toContain(shape);
    expect(quotesRegex(r.text), r.text).toBe(false);
  });

  it("a listing number of the wrong form names its shape and the documented example", async () => {
    const t = await makeTenant();
    const listing = {
      address: "1 Example Road",
      owner_user_id: t.owner.id,
      agent_one_id: t.agent.id,
      listing_number: "NOT-7",
    };
    const r = await call("/api/v1/listings", { key: t.key, body: listing });
    expectError(r, 422, "validation_string_pattern");
    expect(r.json.error.message, r.text).toBe("listing_number: Expected 7 lowercase letters or digits, like k3v9x2a.");
    // The field declares its pattern, so ctx carries it too (the spec's `ctx.pattern` when declared); the words lead.
    expect(r.json.error.details.errors[0].ctx, r.text).toEqual({
      format: "regex",
      expected: "7 lowercase letters or digits",
      example: "k3v9x2a",
      pattern: "^[a-z0-9]{7}$",
    });
    expect(quotesRegex(r.json.error.message), r.text).toBe(false);
    expect(quotesRegex(r.json.error.details.errors[0].message), r.text).toBe(false);
  });

  it("a path parameter of the wrong form (a subscription id) names its shape too", async () => {
    const t = await makeTenant();
    const r = await call("/api/v1/test_helpers/billing/subscriptions/not-a-sub/cancel", { key: t.key, body: {} });
    expectError(r, 422, "validation_string_pattern");
    expect(r.json.error.details.errors[0], r.text).toMatchObject({
      field: "subscription_id",
      message: "Expected `sub_` followed by 1 to 64 letters or digits, like sub_3k2a1q8v2l0c9z7rj4mhx0ab.",
      ctx: { pattern: "^sub_[A-Za-z0-9]{1,64}$" },
    });
    expect(quotesRegex(r.json.error.message), r.text).toBe(false);
  });
});

describe("query validation", () => {
  it("request_query_invalid for out-of-range, malformed and unknown parameters", async () => {
    const t = await makeTenant();
    const tooBig = await call("/api/v1/users?limit=201", { key: t.key });
    expectError(tooBig, 422, "request_query_invalid");
    expect(tooBig.json.error.details.errors[0]).toMatchObject({
      field: "limit",
      code: "validation_out_of_range",
      ctx: { maximum: 200 },
    });
    expectError(await call("/api/v1/users?limit=abc", { key: t.key }), 422, "request_query_invalid");
    const caseSensitive = await call("/api/v1/users?Limit=5", { key: t.key });
    expectError(caseSensitive, 422, "request_query_invalid");
    expect(caseSensitive.json.error.details.errors[0]).toMatchObject({
      field: "Limit",
      code: "validation_unknown_field",
      did_you_mean: ["limit"],
    });
    expectError(await call("/api/v1/users?role=chief", { key: t.key }), 422, "request_query_invalid");
  });

  it("a cursor that was altered, truncated or issued for another list is request_query_invalid", async () => {
    const t = await makeTenant();
    const page = await call("/api/v1/users?limit=1", { key: t.key });
    const cursor: string = page.json.next_cursor;
    expect(cursor).not.toBe("");
    const flipped = cursor.slice(0, 5) + (cursor[5] === "A" ? "B" : "A") + cursor.slice(6);
    for (const bad of [flipped, cursor.slice(0, -3), "garbage", `${cursor}.x`]) {
      expectError(
        await call(`/api/v1/users?limit=1&cursor=${encodeURIComponent(bad)}`, { key: t.key }),
        422,
        "request_query_invalid",
      );
    }
    const filtered = await call(`/api/v1/users?limit=1&role=agent&cursor=${encodeURIComponent(cursor)}`, {
      key: t.key,
    });
    expectError(filtered, 422, "request_query_invalid");
    const other = await makeTenant();
    expectError(
      await call(`/api/v1/users?limit=1&cursor=${encodeURIComponent(cursor)}`, { key: other.key }),
      422,
      "request_query_invalid",
    );
  });

  it("validation is never reached by an unauthenticated caller", async () => {
    expectError(await call("/api/v1/users?limit=9999"), 401, "api_key_missing");
  });
});
