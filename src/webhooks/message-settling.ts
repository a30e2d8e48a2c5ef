import { errorText, log } from "../lib/log";
import type { AttemptOutcome, OutcomeWriter } from "./outcome-writer";
import { MAX_RETRY_DELAY_SECONDS, retryDelay } from "./retry-schedule";

/**
 * A webhook queue message: one delivery, with a child span of its event's trace (absent
 * on messages sent before traces were carried, and on a replay, which keeps the event's).
 */
export interface DeliveryBody {
  delivery_id: string;
  traceparent?: string;
}
export type DeliveryMessage = Message<DeliveryBody>;

/**
 * Retries a message as if its attempt had failed: never sooner than the schedule
 * (`retryDelay`), nor before `notBefore` (an endpoint's pause, another batch's lease), and
 * never later than MAX_RETRY_DELAY_SECONDS.
 */
export const retryLater = (message: Message<unknown>, notBefore = 0) =>
  message.retry({
    delaySeconds: Math.min(
      MAX_RETRY_DELAY_SECONDS,
      Math.max(retryDelay(message.attempts), Math.ceil((notBefore - Date.now()) / 1000)),
    ),
  });

/** Logs a failure of our own (D1, a sealed secret that does not open) that holds back one message. */
export const logDeliveryFailure = (message: DeliveryMessage, err: unknown) =>
  log.error("webhook delivery failed", {
    job: "webhook_delivery",
    delivery_id: message.body.delivery_id,
    attempt: message.attempts,
    error: errorText(err),
  });

/**
 * Settles a batch's attempted and put-back messages, each only once its row is written:
 * acked when its delivery is settled, retried on the schedule otherwise.
 */
export function messageSettler(writer: OutcomeWriter) {
  const settling: Promise<void>[] = [];
  return {
    /** Settles the message once its delivery's lease is freed (or, if D1 refuses, left to expire). */
    putBack(message: DeliveryMessage) {
      settling.push(
        writer.release(message.body.delivery_id).then(
          () => retryLater(message),
          () => retryLater(message),
        ),
      );
    },
    /** Records the attempt, then acks the message, or retries it if the attempt failed or was not recorded. */
    record(message: DeliveryMessage, outcome: AttemptOutcome, failed: boolean) {
      settling.push(
        writer.record(outcome).then(
          () => (failed ? retryLater(message) : message.ack()),
          (err: unknown) => {
            logDeliveryFailure(message, err);
            retryLater(message);
          },
        ),
      );
    },
    /** Resolves once every message handed over is settled. */
    async settled() {
      await Promise.all(settling);
    },
  };
}
