import { logFailure } from "../../lib/telemetry/log";
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
  logFailure(
    "webhook delivery failed",
    { job: "webhook_delivery", delivery_id: message.body.delivery_id, attempt: message.attempts },
    err,
  );

/**
 * Settles a batch's attempted and put-back messages (`messages`), each only once its row
 * is written: acked when its delivery is settled, retried on the schedule otherwise. Once
 * the batch is handed over (its deadline passed), the messages still open are retried and
 * later outcomes are written without settling any message.
 */
export function messageSettler(writer: OutcomeWriter, messages: readonly DeliveryMessage[]) {
  const settling: Promise<void>[] = [];
  const open = new Set(messages);
  const settle = (message: DeliveryMessage, how: () => void) => {
    if (open.delete(message)) how();
  };
  return {
    /** Settles the message once its delivery's lease is freed (or, if D1 refuses, left to expire). */
    putBack(message: DeliveryMessage) {
      const later = () => settle(message, () => retryLater(message));
      settling.push(writer.release(message.body.delivery_id).then(later, later));
    },
    /** Records the attempt, then acks the message, or retries it if the attempt failed or was not recorded. */
    record(message: DeliveryMessage, outcome: AttemptOutcome, failed: boolean) {
      settling.push(
        writer.record(outcome).then(
          () => settle(message, () => (failed ? retryLater(message) : message.ack())),
          (err: unknown) => {
            logDeliveryFailure(message, err);
            settle(message, () => retryLater(message));
          },
        ),
      );
    },
    /**
     * Retries every message not settled yet, not before `notBefore` (the batch's lease: its
     * delivery may still be in flight), and returns them. A redelivered message whose
     * delivery was settled meanwhile is acked without a request.
     */
    handOver(notBefore: number): DeliveryMessage[] {
      const left = [...open];
      open.clear();
      for (const message of left) retryLater(message, notBefore);
      return left;
    },
    /** Resolves once every outcome and release handed in is written (or refused). */
    async settled() {
      await Promise.all(settling);
    },
  };
}
