import { app } from "./app";
import { runQueue } from "./queue";
import { runScheduled } from "./scheduled";

export { AgencyBudget } from "./durable/agency-budget";
export { IdempotencyLedger } from "./durable/idempotency-ledger";
export { IdempotencyLock } from "./durable/idempotency-lock";
export { KeyGate } from "./durable/key-gate/gate";
export { ShardMover } from "./durable/mover/mover";
export { WebhookReplayer } from "./durable/replayer";

export default {
  fetch: app.fetch,
  async scheduled(controller: ScheduledController, env: Env, ctx: ExecutionContext) {
    ctx.waitUntil(runScheduled(controller, env));
  },
  async queue(batch: MessageBatch, env: Env, ctx: ExecutionContext) {
    await runQueue(batch, env, ctx);
  },
} satisfies ExportedHandler<Env>;
