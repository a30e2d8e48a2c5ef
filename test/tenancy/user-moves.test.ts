import { describe, expect, it } from "vitest";
import { call, expectError, makeTenant } from "../support/harness";

describe("the sandbox user helpers tell the key gates, like the dashboard routes", () => {
  const H = "/api/v1/test_helpers/users";

  it("after the deactivate helper, a key the user minted is refused on the very next request", async () => {
    const t = await makeTenant();
    expect((await call("/api/v1/users", { key: t.key })).status).toBe(200);
    const r = await call(`${H}/${t.owner.id}/deactivate`, { key: t.key, body: {} });
    expect(r.status, r.text).toBe(200);
    const refused = await call("/api/v1/users", { key: t.key });
    expectError(refused, 401, "api_key_disabled");
    expect(refused.json.error.details).toEqual({ reason: "minting_user_inactive" });
  });
});
