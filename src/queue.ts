import { agencyShard, type ShardName, shardEnv, shardOfMessage } from "./db/shards";
import { log } from "./lib/telemetry/log";
import { inRun } from "./lib/telemetry/run-event";
import { consumeMedia } from "./media/consumer";
import { consumeDeadMedia } from "./media/dead-letters";
import { isR2Event } from "./media/uploads/r2-notification";
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

/**
 * Each message is consumed under the environment of the shard it was sent for (`shardEnv`):
 * a batch is split by shard, and each part runs as a batch of its own, one after another.
 */
async function consume(batch: MessageBatch, env: Env, ctx: ExecutionContext): Promise<void> {
  const parts = new Map<ShardName, Message[]>();
  for (const message of batch.messages) {
    const shard = await shardFor(env, message.body);
    const part = parts.get(shard);
    if (part) part.push(message);
    else parts.set(shard, [message]);
  }
  for (const [shard, messages] of parts) await consumePart(partOf(batch, messages), shardEnv(env, shard), ctx);
}

/**
 * The shard a message is for: the one it names, or for R2's notice of a stored object (which
 * names none), the shard of the agency whose id starts the object's key.
 */
async function shardFor(env: Env, body: unknown): Promise<ShardName> {
  if (!isR2Event(body)) return shardOfMessage(body);
  const agencyId = body.object.key.split("/")[0] ?? "";
  return (await agencyShard(env, agencyId))?.shard ?? shardOfMessage(body);
}

/** Some of a batch's messages, as a batch of their own. */
const partOf = (batch: MessageBatch, messages: Message[]): MessageBatch => ({
  queue: batch.queue,
  metadata: batch.metadata,
  messages,
  retryAll: (options) => {
    for (const m of messages) m.retry(options);
  },
  ackAll: () => {
    for (const m of messages) m.ack();
  },
});

async function consumePart(batch: MessageBatch, env: Env, ctx: ExecutionContext): Promise<void> {
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
