import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { app, routes } from "../../src/app";

// The workers project's tests: every test/<area>/*.test.ts but those of the Node-side projects.
const testDir = join(__dirname, "..");
const sources = readdirSync(testDir, { recursive: true, encoding: "utf8" })
  .filter((f) => f.endsWith(".test.ts") && !/^(node|browser|cli)\//.test(f))
  .map((f) => readFileSync(join(testDir, f), "utf8"))
  .join("\n");

/**
 * A code counts as mentioned when a test asserts it: as the code of an expectError, or
 * compared with toBe. A mention is not proof that the route answers it: the generated
 * checks in test/contract/contract.test.ts send each route the requests its guards exist for and
 * fail unless the route answered each code they stand for.
 */
const asserted = (code: string) =>
  new RegExp(`(expectError\\([^;]*?|toBe\\(|code: )"${code.replaceAll(".", "\\.")}"`, "s").test(sources);

describe("documented error codes", () => {
  it("every code a public route documents is asserted by some test", () => {
    expect(app).toBeDefined();
    expect(routes.operations("public").length).toBeGreaterThan(10);
    // The matcher itself: a known asserted code, and one no test mentions.
    expect(asserted("api_key_revoked")).toBe(true);
    expect(asserted("no_such_code_anywhere")).toBe(false);
    const missing = new Map<string, string[]>();
    for (const route of routes.operations("public")) {
      for (const code of route.codes) {
        if (!asserted(code))
          missing.set(code, [...(missing.get(code) ?? []), `${route.method.toUpperCase()} ${route.path}`]);
      }
    }
    expect(Object.fromEntries(missing), "codes documented but never asserted").toEqual({});
  });
});
