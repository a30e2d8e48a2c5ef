import { DomainError } from "../lib/errors";
import { log } from "../lib/telemetry/log";
import { outboundTraceparent } from "../lib/telemetry/trace";

/** Messages of the media queue that this service sends itself. */
export type MediaJob =
  /** Sent with each new upload, due shortly after its URL lapses: settles an upload nobody reported. */
  | { kind: "upload.settle"; upload_id: string }
  | { kind: "delivery"; delivery_id: string }
  /**
   * Sent by an outbox drain that stopped at its bound with events still waiting: the batch
   * that takes it drains the outbox afterwards (see runQueue), so a burst leaves without Cron.
   */
  | { kind: "outbox.drain" };

/**
 * A message as sent: with the sender's trace context, so its consumer continues the trace.
 * Messages sent before traces were carried have none, and start a trace of their own.
 */
type Traced<T> = T & { traceparent?: string };

/** What R2 sends to the same queue for an object-create event notification. */
export interface R2EventNotification {
  account: string;
  bucket: string;
  action: string;
  object: { key: string; size?: number; eTag?: string };
  eventTime?: string;
}

/** What handling a message comes to: ack it, retry it after a delay, or send it again as a fresh message. */
export type Verdict = { retryAfter: number } | "continue" | "done";

const QUEUE_RETRY_AFTER_SECONDS = 30;

/**
 * Sends a job in the current trace, turning a refusal into 503 `queue_unavailable`. Callers send before they
 * write: a job whose record never got written finds nothing and is dropped, while a
 * record without its job would wait forever.
 */
export async function sendJob(queue: Queue, job: MediaJob, delaySeconds?: number): Promise<void> {
  try {
    const traced: Traced<MediaJob> = { ...job, traceparent: outboundTraceparent() };
    await queue.send(traced, delaySeconds ? { delaySeconds } : undefined);
  } catch (err) {
    log.error("media job send failed", { job: job.kind, error: String(err) });
    throw new DomainError("queue_unavailable", {
      retryAfter: QUEUE_RETRY_AFTER_SECONDS,
      details: { retry_after_seconds: QUEUE_RETRY_AFTER_SECONDS },
    });
  }
}
