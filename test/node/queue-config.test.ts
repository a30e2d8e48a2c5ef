import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { CONSUMER_BATCH, CONSUMER_BATCH_TIMEOUT_MS } from "../support/queue-config";

/** Each environment's webhook consumer entry in wrangler.jsonc: its batch size and timeout. */
function webhookConsumers(text: string) {
  const entries = [...text.matchAll(/\{[^{}]*"queue":\s*"alms-webhooks-(local|sandbox|live)"[^{}]*\}/g)];
  return entries
    .filter((m) => /"max_batch_size"/.test(m[0]))
    .map((m) => ({
      environment: m[1],
      size: Number(/"max_batch_size":\s*(\d+)/.exec(m[0])?.[1]),
      timeoutMs: Number(/"max_batch_timeout":\s*(\d+)/.exec(m[0])?.[1]) * 1000,
    }));
}

describe("the webhook consumer's batches as the tests assume them", () => {
  it("match wrangler.jsonc in every environment", () => {
    const consumers = webhookConsumers(readFileSync("wrangler.jsonc", "utf8"));
    expect(consumers.map((c) => c.environment).sort()).toEqual(["live", "local", "sandbox"]);
    for (const c of consumers) {
      expect(c.size, c.environment).toBe(CONSUMER_BATCH);
      expect(c.timeoutMs, c.environment).toBe(CONSUMER_BATCH_TIMEOUT_MS);
    }
  });
});
