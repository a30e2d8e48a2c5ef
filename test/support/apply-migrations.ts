import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { afterEach, expect } from "vitest";
import { SHARD_NAMES, shardD1 } from "../../src/db/shards";
import { breaches } from "./d1-guard";
import { contextCheck } from "./signal";

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

// A test whose code went on in another request's context (it awaited a promise that a Durable
// Object or a handler settled) fails here, rather than leaving the file's end to that context,
// where the test pool can wait for it for ever (test/support/signal.ts says why, and what to use).
const atHome = contextCheck();
afterEach(() => {
  expect(
    atHome(),
    "the test went on in another request's context: signal across contexts with test/support/signal.ts",
  ).toBe(true);
});
