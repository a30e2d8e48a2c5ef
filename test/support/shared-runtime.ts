// A runtime that several test files share runs them one after another: work a file left
// behind would carry on into the next. A call to another host that no test intercepted is
// refused at once, so nothing leaves this machine and nothing waits on a name look-up; and
// once a file ends, what it left for the outbox and the webhook queue is ended too. Each file
// starts with the isolate's budget of sampled traces unspent, as a file of its own would.
import { env } from "cloudflare:workers";
import { afterAll, beforeAll } from "vitest";
import { forgetSampledTraces } from "../../src/lib/telemetry/trace";

beforeAll(() => forgetSampledTraces());

const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/;
const GUARDED = Symbol.for("alms.test.outbound-guard");

const current = globalThis.fetch as typeof fetch & { [GUARDED]?: true };
if (!current[GUARDED]) {
  const guarded = (async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (!LOOPBACK.test(url.hostname)) throw new TypeError(`outbound call to ${url.host} refused in tests`);
    return current(input, init);
  }) as typeof fetch & { [GUARDED]?: true };
  guarded[GUARDED] = true;
  globalThis.fetch = guarded;
}

// Events no drain has sent are set aside, and pending deliveries end: a message of the
// webhook queue still on its way is then settled without a request.
afterAll(async () => {
  const now = new Date().toISOString();
  await env.DB.batch([
    env.DB.prepare("UPDATE events SET set_aside_at = ? WHERE enqueued_at IS NULL AND set_aside_at IS NULL").bind(now),
    env.DB.prepare("UPDATE webhook_deliveries SET status = 'dead', leased_until = NULL WHERE status = 'pending'"),
  ]);
});
