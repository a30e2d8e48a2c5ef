import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  backgroundSettled,
  FUZZ_RUNS,
  FUZZ_SEED,
  fuzz,
  fuzzTenant,
  loadDoc,
  operations,
  operatorAuth,
  type Pools,
  settleReplays,
} from "../support/fuzz-kit";
import type { Doc } from "../support/fuzz-schema";

let doc: Doc;
let internalDoc: Doc;
beforeAll(async () => {
  doc = await loadDoc("/api/v1/openapi.json");
  internalDoc = await loadDoc("/internal/v1/openapi.json", operatorAuth);
});

describe("schema fuzzing of the public document", () => {
  afterAll(settleReplays, 30_000);

  it("answers every generated request with a documented, schema-valid response and never a 5xx", async () => {
    const { tenant, pools } = await fuzzTenant(internalDoc);
    const runs = FUZZ_RUNS ? Math.ceil(FUZZ_RUNS * 0.6) : 1200;
    console.log(`public fuzz: seed ${FUZZ_SEED}, ${runs} requests`);
    const sent = await fuzz(doc, operations(doc), pools as Pools, { "X-API-Key": tenant.key }, runs);
    expect(sent).toBeGreaterThanOrEqual(runs);
    await backgroundSettled();
  }, 600_000);
});
