import { database } from "../db/client";
import { log } from "../lib/telemetry/log";
import { abandonDelivery } from "./delivery/finish";
import type { MediaJob, R2EventNotification } from "./jobs";
import { isR2Event, objectCreated } from "./uploads/r2-notification";
import { settleJob } from "./uploads/settle";

/**
 * The media dead-letter queue: messages the consumer failed on every retry. A delivery
 * is ended through abandonDelivery; an upload's settle job or R2 notification gets one
 * more try (both change only a pending upload). Each message is settled on its own.
 */
export async function consumeDeadMedia(batch: MessageBatch, env: Env): Promise<void> {
  const db = database(env.DB);
  for (const msg of batch.messages) {
    try {
      const body = msg.body as MediaJob | R2EventNotification;
      if (isR2Event(body)) await objectCreated(db, env, body);
      else if (body?.kind === "delivery")
        await abandonDelivery(db, body.delivery_id, "delivery abandoned: its job failed on every retry");
      else if (body?.kind === "upload.settle") await settleJob(db, env, body.upload_id, false);
      msg.ack();
    } catch (err) {
      log.error("dead media message failed", { job: "media_dlq", message_id: msg.id, error: String(err) });
      msg.retry({ delaySeconds: 60 });
    }
  }
}
