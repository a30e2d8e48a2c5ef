import { describe, expect, it } from "vitest";
import { FUZZ_SEED } from "../support/fuzz-kit";
import { runModel } from "../support/model-kit";

// Two files of 100 sequences each, so that the Workers pool runs them side by side.
describe("model-based sequences of listings, idempotency, webhooks and keys (a)", () => {
  it("keeps the API in step with an in-memory model over 100 short sequences", async () => {
    expect(await runModel(100, FUZZ_SEED + 2)).toBeGreaterThanOrEqual(100);
  }, 300_000);
});
