import { type Db, database } from "../db/client";
import { log } from "../lib/telemetry/log";
import { continueTrace, inTrace } from "../lib/telemetry/trace";
import { deliver } from "./delivery/attempt";
import { type Budget, batchBudget, take } from "./delivery/batch-budget";
import { runLanes } from "./delivery/batch-lanes";
import type { MediaJob, Verdict } from "./jobs";
import { isR2Event, objectCreated } from "./uploads/r2-notification";
import { settleJob } from "./uploads/settle";

/** A job may be consumed before the write that follows its send commits: wait for it this long. */
const YOUNG_JOB_MS = 60_000;

/**
 * The media queue's consumer: messages are settled one by one (ack, or retry with its
 * own delay), never the batch as a whole. They run on lanes (see runLanes): settles and
 * notifications beside the deliveries, deliveries side by side with a share per agency.
 * A message the batch has no budget left for when its turn comes, and a delivery with
 * files still pending after its run, go back as a fresh message, so they spend none of
 * the queue's retries.
 */
export async function consumeMedia(batch: MessageBatch, env: Env, _ctx: ExecutionContext): Promise<void> {
  const db = database(env.DB);
  const budget = batchBudget();
  await runLanes(db, batch.messages, budget.copies, async (msg) => {
    try {
      const verdict = take(budget, 2)
        ? await inTrace(traceOf(msg.body), () => handle(db, env, msg.body, msg.timestamp, budget))
        : "continue";
      if (verdict === "continue") await env.MEDIA_QUEUE.send(msg.body);
      if (verdict === "done" || verdict === "continue") msg.ack();
      else msg.retry({ delaySeconds: verdict.retryAfter });
    } catch (err) {
      log.error("media message failed", {
        job: "media",
        message_id: msg.id,
        error: String(err),
        stack: err instanceof Error ? err.stack : undefined,
      });
      msg.retry({ delaySeconds: 30 });
    }
  });
}

/** The trace the message's sender was in (a child span of it), or a new one for a message without it. */
const traceOf = (body: unknown) =>
  continueTrace(typeof body === "object" && body && "traceparent" in body ? String(body.traceparent) : undefined);

async function handle(db: Db, env: Env, body: unknown, sentAt: Date, budget: Budget): Promise<Verdict> {
  if (isR2Event(body)) return objectCreated(db, env, body);
  const job = body as MediaJob;
  const young = Date.now() - sentAt.getTime() < YOUNG_JOB_MS;
  switch (job?.kind) {
    case "upload.settle":
      return settleJob(db, env, job.upload_id, young);
    case "delivery":
      return deliver(db, env, job.delivery_id, young, budget);
    case "outbox.drain":
      // The drain itself runs once the batch is done (runQueue kicks the outbox after every media batch).
      return "done";
    default:
      log.error("unknown media message", { job: "media", error: "unknown message", body });
      return "done";
  }
}
