import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, expect } from "vitest";
import { breaches } from "./d1-guard";

await applyD1Migrations(env.DB, env.TEST_MIGRATIONS);

// A statement that production's D1 would refuse fails the test that sent it, even where
// the local runtime let it through or the code under test swallowed the error.
afterEach(() => {
  const seen = breaches.splice(0);
  expect(seen, "D1 production limits breached").toEqual([]);
});
