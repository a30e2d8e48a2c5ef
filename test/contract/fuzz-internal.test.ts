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
  settleReplays,
} from "../support/fuzz-kit";
import type { Doc } from "../support/fuzz-schema";
import { internal } from "../support/harness";

let doc: Doc;
beforeAll(async () => {
  doc = await loadDoc("/internal/v1/openapi.json", operatorAuth);
});

describe("schema fuzzing of the internal document", () => {
  afterAll(settleReplays, 30_000);

  it("answers every generated operator request with a documented, schema-valid response and never a 5xx", async () => {
    const { tenant, pools } = await fuzzTenant(doc);
    const [listing] = pools.listing_number!;
    const appointment = await internal(`/internal/v1/agencies/${tenant.agencyId}/listings/${listing}/appointments`, {
      method: "POST",
      body: { starts_at: "2026-12-01T17:00:00Z", ends_at: "2026-12-01T19:00:00Z" },
    });
    pools.appointment_id = [appointment.json?.id].filter(Boolean);
    const runs = FUZZ_RUNS ? Math.ceil(FUZZ_RUNS * 0.4) : 900;
    console.log(`internal fuzz: seed ${FUZZ_SEED + 1}, ${runs} requests`);
    const sent = await fuzz(doc, operations(doc), pools, operatorAuth, runs, FUZZ_SEED + 1);
    expect(sent).toBeGreaterThanOrEqual(runs);
    await backgroundSettled();
  }, 600_000);
});
