import { app } from "./app";
import { runScheduled } from "./scheduled";

export { KeyGate } from "./durable/key-gate";
export { IdempotencyLock } from "./durable/idempotency-lock";

export default {
  fetch: app.fetch,
  async scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext) {
    ctx.waitUntil(runScheduled(controller, env));
  },
} satisfies ExportedHandler<Env>;
