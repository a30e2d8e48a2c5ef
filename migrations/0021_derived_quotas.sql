-- What each write derives counts against its agency too: events, webhook deliveries and their
-- attempts, idempotency commit marks and tour search grams, kept exact in agency_usage by the
-- triggers below, as 0011 does for what clients create.
--
-- Refusals happen where a client's write would add them, in that write's statement:
-- * an event refuses its batch while the agency is at its events, webhook_deliveries or
--   webhook_attempts quota (deliveries and attempts are written later, by the drain and the
--   consumer, which never refuse: an event the agency could write is always delivered). Events
--   of the platform's own making (payments, subscriptions, calendar orphans, media deliveries)
--   are counted but never refused: they record what already happened;
-- * a commit mark refuses its batch at the idempotency_marks quota;
-- * a tour whose address would take the agency's search grams past their quota is refused
--   (an address of n characters has at most n + 1 grams).
INSERT INTO quota_defaults (resource, quota) VALUES
  ('events', 100000),
  ('webhook_deliveries', 400000),
  ('webhook_attempts', 800000),
  ('idempotency_marks', 200000),
  ('tour_search_grams', 5000000);
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'events', count(*) FROM events GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'webhook_deliveries', count(*) FROM webhook_deliveries GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT d.agency_id, 'webhook_attempts', count(*) FROM webhook_delivery_attempts a
  JOIN webhook_deliveries d ON d.id = a.delivery_id GROUP BY d.agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'idempotency_marks', count(*) FROM idempotency_marks GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'tour_search_grams', count(*) FROM tour_search_grams GROUP BY agency_id;
--> statement-breakpoint
CREATE TRIGGER events_quota BEFORE INSERT ON events
WHEN new.event_type NOT IN ('invoice.payment_made', 'subscription.created', 'subscription.cancelled', 'appointment.orphan.detected', 'media.delivery.completed', 'media.delivery.failed')
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:events')
  WHERE coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'events'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'events'),
    (SELECT quota FROM quota_defaults WHERE resource = 'events'));
  SELECT RAISE(ABORT, 'agency_quota_exceeded:webhook_deliveries')
  WHERE coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'webhook_deliveries'), 0) >= coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'webhook_deliveries'),
    (SELECT quota FROM quota_defaults WHERE resource = 'webhook_deliveries'));
  SELECT RAISE(ABORT, 'agency_quota_exceeded:webhook_attempts')
  WHERE coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'webhook_attempts'), 0) >= coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'webhook_attempts'),
    (SELECT quota FROM quota_defaults WHERE resource = 'webhook_attempts'));
END;
--> statement-breakpoint
CREATE TRIGGER events_usage_insert AFTER INSERT ON events BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'events', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER events_usage_delete AFTER DELETE ON events BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'events';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_usage_insert AFTER INSERT ON webhook_deliveries BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'webhook_deliveries', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_usage_delete AFTER DELETE ON webhook_deliveries BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'webhook_deliveries';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_delivery_attempts_usage_insert AFTER INSERT ON webhook_delivery_attempts
WHEN (SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id) IS NOT NULL BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES ((SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id), 'webhook_attempts', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_delivery_attempts_usage_delete AFTER DELETE ON webhook_delivery_attempts BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id) AND resource = 'webhook_attempts';
END;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_quota BEFORE INSERT ON idempotency_marks
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'idempotency_marks'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'idempotency_marks'),
    (SELECT quota FROM quota_defaults WHERE resource = 'idempotency_marks'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:idempotency_marks');
END;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_usage_insert AFTER INSERT ON idempotency_marks BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'idempotency_marks', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_usage_delete AFTER DELETE ON idempotency_marks BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'idempotency_marks';
END;
--> statement-breakpoint
CREATE TRIGGER tours_search_grams_quota BEFORE INSERT ON tours
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'), 0) + length(new.address) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_search_grams'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_search_grams');
END;
--> statement-breakpoint
CREATE TRIGGER tours_search_grams_quota_update BEFORE UPDATE OF address ON tours
WHEN old.address IS NOT new.address
  AND coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'), 0) + length(new.address) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_search_grams'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_search_grams');
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_usage_insert AFTER INSERT ON tour_search_grams BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'tour_search_grams', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_usage_delete AFTER DELETE ON tour_search_grams BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'tour_search_grams';
END;
