ALTER TABLE `webhook_endpoints` ADD `sandbox_drop_next` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
-- The sandbox drop helper: a delivery leased while its endpoint still has drops to give is
-- dropped in the statement that leases it, one drop per row, so concurrent consumers never
-- drop more than asked. It is recorded as one attempt with no request and ends dead; its
-- message is then acked like that of any settled delivery.
CREATE TRIGGER webhook_deliveries_sandbox_drop AFTER UPDATE OF leased_until ON webhook_deliveries
WHEN new.leased_until IS NOT NULL AND new.status = 'pending'
  AND (SELECT sandbox_drop_next FROM webhook_endpoints WHERE id = new.endpoint_id) > 0 BEGIN
  UPDATE webhook_endpoints SET sandbox_drop_next = sandbox_drop_next - 1 WHERE id = new.endpoint_id;
  INSERT INTO webhook_delivery_attempts (id, delivery_id, attempt, attempted_at, response_status, latency_ms, error)
  VALUES ('wha_' || lower(hex(randomblob(11))), new.id, new.attempts + 1,
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL, 0, 'dropped by sandbox helper');
  UPDATE webhook_deliveries SET status = 'dead', attempts = new.attempts + 1, last_response_status = NULL,
    last_error = 'dropped by sandbox helper', leased_until = NULL, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  WHERE id = new.id;
END;
