import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, expect } from "vitest";
import { SHARD_NAMES, shardD1 } from "../../src/db/shards";
import { breaches } from "./d1-guard";

// Every shard carries the full schema, as `npm run dev` and the deploys migrate them.
for (const shard of SHARD_NAMES) await applyD1Migrations(shardD1(env, shard), env.TEST_MIGRATIONS);
// The production limits are held on every shard: the guard wraps the bindings' shared prototype.
for (const shard of SHARD_NAMES)
  if (!(Object.getPrototypeOf(shardD1(env, shard)) as Record<symbol, unknown>)[Symbol.for("d1-production-limits")])
    throw new Error(`The D1 guard does not cover ${shard}.`);

// A statement that production's D1 would refuse fails the test that sent it, even where
// the local runtime let it through or the code under test swallowed the error.
afterEach(() => {
  const seen = breaches.splice(0);
  expect(seen, "D1 production limits breached").toEqual([]);
});
