import { describe, expect, it } from "vitest";
import { PRINTED_KEY } from "../cli/dev-server";

describe("the sandbox key as npm run dev prints it", () => {
  it("is found whatever its last character, in the banner and in the curl line", () => {
    for (const last of ["A", "9", "_", "-"]) {
      const key = `sk_test_${"x".repeat(42)}${last}`;
      expect(`   ${key}\n`.match(PRINTED_KEY)?.[1]).toBe(key);
      expect(`curl -s http://127.0.0.1:8787/api/v1/users -H 'X-API-Key: ${key}'`.match(PRINTED_KEY)?.[1]).toBe(key);
    }
  });

  it("takes no run of key characters longer or shorter than a key", () => {
    expect(`   sk_test_${"x".repeat(44)}\n`.match(PRINTED_KEY)).toBeNull();
    expect(`   sk_test_${"x".repeat(42)}\n`.match(PRINTED_KEY)).toBeNull();
  });
});
