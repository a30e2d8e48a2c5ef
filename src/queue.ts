import { log } from "./lib/telemetry/log";
import { inRun } from "./lib/telemetry/run-event";
import { consumeMedia } from "./media/consumer";
import { consumeDeadMedia } from "./media/dead-letters";
import { consumeWebhooks } from "./webhooks/delivery/batch";
import { consumeDeadWebhooks } from "./webhooks/delivery/dead-letters";
import type { DeliveryBody } from "./webhooks/delivery/settling";
import { kickOutbox } from "./webhooks/outbox/kick";

/**
 * Queue names carry the environment as a suffix (`alms-media-live`); consumers are
 * chosen by the name without it, so one switch serves every environment.
 */
const queueBase = (name: string) => name.replace(/-(local|sandbox|live)$/, "");

/**
 * Queue entry point: each queue's batches go to that queue's consumer, one wide event per
 * batch. Each message continues its own sender's trace (see the consumers).
 */
export function runQueue(batch: MessageBatch, env: Env, ctx: ExecutionContext): Promise<void> {
  const fields = { queue: batch.queue, messages: batch.messages.length };
  return inRun({ job: "queue", environment: env.ENVIRONMENT, fields }, () => consume(batch, env, ctx));
}

async function consume(batch: MessageBatch, env: Env, ctx: ExecutionContext): Promise<void> {
  switch (queueBase(batch.queue)) {
    case "alms-media":
      await consumeMedia(batch, env, ctx);
      // media.delivery.* events it wrote leave now rather than at the next minute's sweep.
      return kickOutbox(env, ctx);
    case "alms-media-dlq":
      await consumeDeadMedia(batch, env);
      return kickOutbox(env, ctx);
    case "alms-webhooks":
      return consumeWebhooks(batch as MessageBatch<DeliveryBody>, env, ctx);
    case "alms-webhooks-dlq":
      return consumeDeadWebhooks(batch as MessageBatch<DeliveryBody>, env);
    default:
      // A queue bound without a consumer here is a configuration error: keep its messages.
      log.error("no consumer for queue", { job: "queue", error: "no consumer for queue", queue: batch.queue });
      batch.retryAll({ delaySeconds: 300 });
  }
}
