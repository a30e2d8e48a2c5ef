import { describe, expect, it } from "vitest";
import { expectError, internal, makeTenant } from "../support/harness";

/** A next_cursor of the list at `path`, with a page size of 1 so that there is a next page. */
async function cursorOf(path: string): Promise<string> {
  const r = await internal(`${path}${path.includes("?") ? "&" : "?"}limit=1`);
  expect(r.status, r.text).toBe(200);
  expect(r.json.next_cursor, r.text).not.toBe("");
  return r.json.next_cursor;
}

describe("internal lists refuse a cursor that is not theirs", () => {
  it("usage and agencies refuse garbage, and each other's cursors, with 422", async () => {
    const t = await makeTenant();
    await makeTenant();
    const usage = await cursorOf("/internal/v1/usage");
    const agencies = await cursorOf("/internal/v1/agencies");
    const users = await cursorOf(`/internal/v1/users?agency_id=${t.agencyId}`);
    for (const cursor of ["null", "💥", agencies, users]) {
      expectError(
        await internal(`/internal/v1/usage?cursor=${encodeURIComponent(cursor)}`),
        422,
        "request_query_invalid",
      );
    }
    for (const cursor of ["null", "💥", usage, users]) {
      expectError(
        await internal(`/internal/v1/agencies?cursor=${encodeURIComponent(cursor)}`),
        422,
        "request_query_invalid",
      );
    }
    // Each still pages with its own.
    expect((await internal(`/internal/v1/usage?cursor=${encodeURIComponent(usage)}`)).status).toBe(200);
    expect((await internal(`/internal/v1/agencies?cursor=${encodeURIComponent(agencies)}`)).status).toBe(200);
  });
});
