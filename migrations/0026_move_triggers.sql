-- Triggers skip what a move's own batches write (move_mute), and the rows of an agency leaving
-- its shard are journalled while copied, refused while fenced, skipped once gone (agency_departures).
DROP TRIGGER api_keys_quota;
--> statement-breakpoint
CREATE TRIGGER api_keys_quota BEFORE INSERT ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'api_keys'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'api_keys'),
    (SELECT quota FROM quota_defaults WHERE resource = 'api_keys')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:api_keys');
END;
--> statement-breakpoint
DROP TRIGGER api_keys_usage_delete;
--> statement-breakpoint
CREATE TRIGGER api_keys_usage_delete AFTER DELETE ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'api_keys';
END;
--> statement-breakpoint
DROP TRIGGER api_keys_usage_insert;
--> statement-breakpoint
CREATE TRIGGER api_keys_usage_insert AFTER INSERT ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'api_keys', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER appointments_quota;
--> statement-breakpoint
CREATE TRIGGER appointments_quota BEFORE INSERT ON appointments
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'appointments'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'appointments'),
    (SELECT quota FROM quota_defaults WHERE resource = 'appointments')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:appointments');
END;
--> statement-breakpoint
DROP TRIGGER appointments_usage_delete;
--> statement-breakpoint
CREATE TRIGGER appointments_usage_delete AFTER DELETE ON appointments
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'appointments';
END;
--> statement-breakpoint
DROP TRIGGER appointments_usage_insert;
--> statement-breakpoint
CREATE TRIGGER appointments_usage_insert AFTER INSERT ON appointments
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'appointments', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER events_quota;
--> statement-breakpoint
CREATE TRIGGER events_quota BEFORE INSERT ON events
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.event_type NOT IN ('invoice.payment_made', 'subscription.created', 'subscription.cancelled', 'appointment.orphan.detected', 'media.delivery.completed', 'media.delivery.failed'))
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
DROP TRIGGER events_sequence;
--> statement-breakpoint
CREATE TRIGGER events_sequence AFTER INSERT ON events
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO event_sequences (agency_id, last, last_created_at) VALUES (new.agency_id, 1, new.created_at)
  ON CONFLICT (agency_id) DO UPDATE SET
    last = last + 1,
    last_created_at = max(coalesce(last_created_at, excluded.last_created_at), excluded.last_created_at);
  UPDATE events SET
    sequence = (SELECT last FROM event_sequences WHERE agency_id = new.agency_id),
    created_at = (SELECT last_created_at FROM event_sequences WHERE agency_id = new.agency_id)
  WHERE rowid = new.rowid;
END;
--> statement-breakpoint
DROP TRIGGER events_usage_delete;
--> statement-breakpoint
CREATE TRIGGER events_usage_delete AFTER DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'events';
END;
--> statement-breakpoint
DROP TRIGGER events_usage_insert;
--> statement-breakpoint
CREATE TRIGGER events_usage_insert AFTER INSERT ON events
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'events', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER idempotency_marks_quota;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_quota BEFORE INSERT ON idempotency_marks
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'idempotency_marks'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'idempotency_marks'),
    (SELECT quota FROM quota_defaults WHERE resource = 'idempotency_marks')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:idempotency_marks');
END;
--> statement-breakpoint
DROP TRIGGER idempotency_marks_usage_delete;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_usage_delete AFTER DELETE ON idempotency_marks
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'idempotency_marks';
END;
--> statement-breakpoint
DROP TRIGGER idempotency_marks_usage_insert;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_usage_insert AFTER INSERT ON idempotency_marks
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'idempotency_marks', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER listing_orders_version;
--> statement-breakpoint
CREATE TRIGGER listing_orders_version AFTER UPDATE ON listing_orders
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.version = old.version AND (old.kind IS NOT new.kind OR old.invoice_id IS NOT new.invoice_id OR old.amount_minor IS NOT new.amount_minor OR old.currency IS NOT new.currency OR old.status IS NOT new.status OR old.provider_reference IS NOT new.provider_reference OR old.issued_at IS NOT new.issued_at OR old.paid_at IS NOT new.paid_at))
BEGIN
  UPDATE listing_orders SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
DROP TRIGGER listings_bytes_delete;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_delete AFTER DELETE ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0))
  WHERE agency_id = old.agency_id AND resource = 'listing_bytes';
END;
--> statement-breakpoint
DROP TRIGGER listings_bytes_insert;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_insert AFTER INSERT ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'listing_bytes',
    coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0))
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER listings_bytes_quota;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_quota BEFORE INSERT ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'listing_bytes'), 0) + (
    coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'listing_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'listing_bytes')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:listing_bytes');
END;
--> statement-breakpoint
DROP TRIGGER listings_bytes_quota_update;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_quota_update BEFORE UPDATE OF address, floorplan_urls, matterport_url ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND ((coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) > (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0))
  AND coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'listing_bytes'), 0) + (coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0)) > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'listing_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'listing_bytes')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:listing_bytes');
END;
--> statement-breakpoint
DROP TRIGGER listings_bytes_update;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_update AFTER UPDATE OF address, floorplan_urls, matterport_url ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used + (coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0))
  WHERE agency_id = new.agency_id AND resource = 'listing_bytes';
END;
--> statement-breakpoint
DROP TRIGGER listings_quota;
--> statement-breakpoint
CREATE TRIGGER listings_quota BEFORE INSERT ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'listings'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'listings'),
    (SELECT quota FROM quota_defaults WHERE resource = 'listings')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:listings');
END;
--> statement-breakpoint
DROP TRIGGER listings_usage_delete;
--> statement-breakpoint
CREATE TRIGGER listings_usage_delete AFTER DELETE ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'listings';
END;
--> statement-breakpoint
DROP TRIGGER listings_usage_insert;
--> statement-breakpoint
CREATE TRIGGER listings_usage_insert AFTER INSERT ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'listings', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER listings_version;
--> statement-breakpoint
CREATE TRIGGER listings_version AFTER UPDATE ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.version = old.version AND (old.address IS NOT new.address OR old.status IS NOT new.status OR old.is_activated IS NOT new.is_activated OR old.owner_user_id IS NOT new.owner_user_id OR old.agent_one_id IS NOT new.agent_one_id OR old.agent_two_id IS NOT new.agent_two_id OR old.floorplan_urls IS NOT new.floorplan_urls OR old.matterport_url IS NOT new.matterport_url OR old.cancelled_at IS NOT new.cancelled_at OR old.updated_at IS NOT new.updated_at))
BEGIN
  UPDATE listings SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
DROP TRIGGER media_bytes_quota;
--> statement-breakpoint
CREATE TRIGGER media_bytes_quota BEFORE INSERT ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.status IN ('pending', 'completed')
  AND coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'media_bytes'), 0) + new.size_bytes > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'media_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'media_bytes')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:media_bytes');
END;
--> statement-breakpoint
DROP TRIGGER media_bytes_usage_delete;
--> statement-breakpoint
CREATE TRIGGER media_bytes_usage_delete AFTER DELETE ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (old.status IN ('pending', 'completed'))
BEGIN
  UPDATE agency_usage SET used = used - old.size_bytes WHERE agency_id = old.agency_id AND resource = 'media_bytes';
END;
--> statement-breakpoint
DROP TRIGGER media_bytes_usage_insert;
--> statement-breakpoint
CREATE TRIGGER media_bytes_usage_insert AFTER INSERT ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.status IN ('pending', 'completed'))
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'media_bytes', new.size_bytes)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER media_bytes_usage_settle;
--> statement-breakpoint
CREATE TRIGGER media_bytes_usage_settle AFTER UPDATE OF status ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (old.status IN ('pending', 'completed') AND new.status NOT IN ('pending', 'completed'))
BEGIN
  UPDATE agency_usage SET used = used - old.size_bytes WHERE agency_id = old.agency_id AND resource = 'media_bytes';
END;
--> statement-breakpoint
DROP TRIGGER media_uploads_quota;
--> statement-breakpoint
CREATE TRIGGER media_uploads_quota BEFORE INSERT ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'media_uploads'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'media_uploads'),
    (SELECT quota FROM quota_defaults WHERE resource = 'media_uploads')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:media_uploads');
END;
--> statement-breakpoint
DROP TRIGGER media_uploads_usage_delete;
--> statement-breakpoint
CREATE TRIGGER media_uploads_usage_delete AFTER DELETE ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'media_uploads';
END;
--> statement-breakpoint
DROP TRIGGER media_uploads_usage_insert;
--> statement-breakpoint
CREATE TRIGGER media_uploads_usage_insert AFTER INSERT ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'media_uploads', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER tour_search_grams_delete;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_delete AFTER DELETE ON tour_search_grams
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE tour_search_gram_counts SET tours = tours - 1 WHERE agency_id = old.agency_id AND gram = old.gram;
  DELETE FROM tour_search_gram_counts WHERE agency_id = old.agency_id AND gram = old.gram AND tours <= 0;
END;
--> statement-breakpoint
DROP TRIGGER tour_search_grams_insert;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_insert AFTER INSERT ON tour_search_grams
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO tour_search_gram_counts (agency_id, gram, tours) VALUES (new.agency_id, new.gram, 1)
  ON CONFLICT (agency_id, gram) DO UPDATE SET tours = tours + 1;
END;
--> statement-breakpoint
DROP TRIGGER tour_search_grams_usage_delete;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_usage_delete AFTER DELETE ON tour_search_grams
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'tour_search_grams';
END;
--> statement-breakpoint
DROP TRIGGER tour_search_grams_usage_insert;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_usage_insert AFTER INSERT ON tour_search_grams
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'tour_search_grams', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER tours_bytes_delete;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_delete AFTER DELETE ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.city AS BLOB)), 0)
    + coalesce(length(CAST(old.state AS BLOB)), 0)
    + coalesce(length(CAST(old.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(old.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(old.description AS BLOB)), 0)
    + coalesce(length(CAST(old.images AS BLOB)), 0)
    + coalesce(length(CAST(old.virtual_tour_url AS BLOB)), 0))
  WHERE agency_id = old.agency_id AND resource = 'tour_bytes';
END;
--> statement-breakpoint
DROP TRIGGER tours_bytes_insert;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_insert AFTER INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'tour_bytes',
    coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.city AS BLOB)), 0)
    + coalesce(length(CAST(new.state AS BLOB)), 0)
    + coalesce(length(CAST(new.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(new.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(new.description AS BLOB)), 0)
    + coalesce(length(CAST(new.images AS BLOB)), 0)
    + coalesce(length(CAST(new.virtual_tour_url AS BLOB)), 0))
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER tours_bytes_quota;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_quota BEFORE INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tour_bytes'), 0) + (
    coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.city AS BLOB)), 0)
    + coalesce(length(CAST(new.state AS BLOB)), 0)
    + coalesce(length(CAST(new.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(new.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(new.description AS BLOB)), 0)
    + coalesce(length(CAST(new.images AS BLOB)), 0)
    + coalesce(length(CAST(new.virtual_tour_url AS BLOB)), 0)) > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tour_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_bytes')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_bytes');
END;
--> statement-breakpoint
DROP TRIGGER tours_bytes_quota_update;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_quota_update BEFORE UPDATE OF address, city, state, zipcode, mls_number, description, images, virtual_tour_url ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND ((coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.city AS BLOB)), 0)
    + coalesce(length(CAST(new.state AS BLOB)), 0)
    + coalesce(length(CAST(new.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(new.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(new.description AS BLOB)), 0)
    + coalesce(length(CAST(new.images AS BLOB)), 0)
    + coalesce(length(CAST(new.virtual_tour_url AS BLOB)), 0)) > (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.city AS BLOB)), 0)
    + coalesce(length(CAST(old.state AS BLOB)), 0)
    + coalesce(length(CAST(old.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(old.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(old.description AS BLOB)), 0)
    + coalesce(length(CAST(old.images AS BLOB)), 0)
    + coalesce(length(CAST(old.virtual_tour_url AS BLOB)), 0))
  AND coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tour_bytes'), 0) + (coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.city AS BLOB)), 0)
    + coalesce(length(CAST(new.state AS BLOB)), 0)
    + coalesce(length(CAST(new.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(new.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(new.description AS BLOB)), 0)
    + coalesce(length(CAST(new.images AS BLOB)), 0)
    + coalesce(length(CAST(new.virtual_tour_url AS BLOB)), 0)) - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.city AS BLOB)), 0)
    + coalesce(length(CAST(old.state AS BLOB)), 0)
    + coalesce(length(CAST(old.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(old.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(old.description AS BLOB)), 0)
    + coalesce(length(CAST(old.images AS BLOB)), 0)
    + coalesce(length(CAST(old.virtual_tour_url AS BLOB)), 0)) > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tour_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_bytes')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_bytes');
END;
--> statement-breakpoint
DROP TRIGGER tours_bytes_update;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_update AFTER UPDATE OF address, city, state, zipcode, mls_number, description, images, virtual_tour_url ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used + (coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.city AS BLOB)), 0)
    + coalesce(length(CAST(new.state AS BLOB)), 0)
    + coalesce(length(CAST(new.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(new.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(new.description AS BLOB)), 0)
    + coalesce(length(CAST(new.images AS BLOB)), 0)
    + coalesce(length(CAST(new.virtual_tour_url AS BLOB)), 0)) - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.city AS BLOB)), 0)
    + coalesce(length(CAST(old.state AS BLOB)), 0)
    + coalesce(length(CAST(old.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(old.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(old.description AS BLOB)), 0)
    + coalesce(length(CAST(old.images AS BLOB)), 0)
    + coalesce(length(CAST(old.virtual_tour_url AS BLOB)), 0))
  WHERE agency_id = new.agency_id AND resource = 'tour_bytes';
END;
--> statement-breakpoint
DROP TRIGGER tours_count_delete;
--> statement-breakpoint
CREATE TRIGGER tours_count_delete AFTER DELETE ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE tour_counts SET tours = tours - 1 WHERE agency_id = old.agency_id AND status = old.status;
END;
--> statement-breakpoint
DROP TRIGGER tours_count_insert;
--> statement-breakpoint
CREATE TRIGGER tours_count_insert AFTER INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO tour_counts (agency_id, status, tours) VALUES (new.agency_id, new.status, 1)
  ON CONFLICT (agency_id, status) DO UPDATE SET tours = tours + 1;
END;
--> statement-breakpoint
DROP TRIGGER tours_count_update;
--> statement-breakpoint
CREATE TRIGGER tours_count_update AFTER UPDATE OF agency_id, status ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (old.agency_id IS NOT new.agency_id OR old.status IS NOT new.status)
BEGIN
  UPDATE tour_counts SET tours = tours - 1 WHERE agency_id = old.agency_id AND status = old.status;
  INSERT INTO tour_counts (agency_id, status, tours) VALUES (new.agency_id, new.status, 1)
  ON CONFLICT (agency_id, status) DO UPDATE SET tours = tours + 1;
END;
--> statement-breakpoint
DROP TRIGGER tours_quota;
--> statement-breakpoint
CREATE TRIGGER tours_quota BEFORE INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tours'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tours'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tours')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tours');
END;
--> statement-breakpoint
DROP TRIGGER tours_search_delete;
--> statement-breakpoint
CREATE TRIGGER tours_search_delete AFTER DELETE ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  DELETE FROM tour_search_grams
  WHERE agency_id = old.agency_id AND tour_id = old.id AND gram IN (
    SELECT substr(lower(old.address), p.key + 1, 3)
    FROM json_each('[' || replace(hex(zeroblob(length(old.address))), '00', '0,') || '0]') AS p
    WHERE p.key < length(old.address)
    UNION ALL
    SELECT ''
  );
END;
--> statement-breakpoint
DROP TRIGGER tours_search_grams_quota;
--> statement-breakpoint
CREATE TRIGGER tours_search_grams_quota BEFORE INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'), 0) + length(new.address) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_search_grams')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_search_grams');
END;
--> statement-breakpoint
DROP TRIGGER tours_search_grams_quota_update;
--> statement-breakpoint
CREATE TRIGGER tours_search_grams_quota_update BEFORE UPDATE OF address ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (old.address IS NOT new.address
  AND coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'), 0) + length(new.address) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tour_search_grams'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_search_grams')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_search_grams');
END;
--> statement-breakpoint
DROP TRIGGER tours_search_insert;
--> statement-breakpoint
CREATE TRIGGER tours_search_insert AFTER INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO tour_search_grams (agency_id, gram, tour_id)
  SELECT DISTINCT new.agency_id, substr(lower(new.address), p.key + 1, 3), new.id
  FROM json_each('[' || replace(hex(zeroblob(length(new.address))), '00', '0,') || '0]') AS p
  WHERE p.key < length(new.address)
  UNION
  SELECT new.agency_id, '', new.id WHERE instr(new.address, char(0)) > 0;
END;
--> statement-breakpoint
DROP TRIGGER tours_search_update;
--> statement-breakpoint
CREATE TRIGGER tours_search_update AFTER UPDATE OF agency_id, address ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (old.agency_id IS NOT new.agency_id OR old.address IS NOT new.address)
BEGIN
  DELETE FROM tour_search_grams
  WHERE agency_id = old.agency_id AND tour_id = old.id AND gram IN (
    SELECT substr(lower(old.address), p.key + 1, 3)
    FROM json_each('[' || replace(hex(zeroblob(length(old.address))), '00', '0,') || '0]') AS p
    WHERE p.key < length(old.address)
    UNION ALL
    SELECT ''
  );
  INSERT INTO tour_search_grams (agency_id, gram, tour_id)
  SELECT DISTINCT new.agency_id, substr(lower(new.address), p.key + 1, 3), new.id
  FROM json_each('[' || replace(hex(zeroblob(length(new.address))), '00', '0,') || '0]') AS p
  WHERE p.key < length(new.address)
  UNION
  SELECT new.agency_id, '', new.id WHERE instr(new.address, char(0)) > 0;
END;
--> statement-breakpoint
DROP TRIGGER tours_usage_delete;
--> statement-breakpoint
CREATE TRIGGER tours_usage_delete AFTER DELETE ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'tours';
END;
--> statement-breakpoint
DROP TRIGGER tours_usage_insert;
--> statement-breakpoint
CREATE TRIGGER tours_usage_insert AFTER INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'tours', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER tours_version;
--> statement-breakpoint
CREATE TRIGGER tours_version AFTER UPDATE ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.version = old.version AND (old.address IS NOT new.address OR old.city IS NOT new.city OR old.state IS NOT new.state OR old.zipcode IS NOT new.zipcode OR old.status IS NOT new.status OR old.mls_number IS NOT new.mls_number OR old.price IS NOT new.price OR old.bedrooms IS NOT new.bedrooms OR old.bathrooms IS NOT new.bathrooms OR old.sqft IS NOT new.sqft OR old.description IS NOT new.description OR old.images IS NOT new.images OR old.virtual_tour_url IS NOT new.virtual_tour_url OR old.updated_at IS NOT new.updated_at))
BEGIN
  UPDATE tours SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
DROP TRIGGER users_quota;
--> statement-breakpoint
CREATE TRIGGER users_quota BEFORE INSERT ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'users'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'users'),
    (SELECT quota FROM quota_defaults WHERE resource = 'users')))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:users');
END;
--> statement-breakpoint
DROP TRIGGER users_usage_delete;
--> statement-breakpoint
CREATE TRIGGER users_usage_delete AFTER DELETE ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'users';
END;
--> statement-breakpoint
DROP TRIGGER users_usage_insert;
--> statement-breakpoint
CREATE TRIGGER users_usage_insert AFTER INSERT ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'users', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER users_usage_move;
--> statement-breakpoint
CREATE TRIGGER users_usage_move AFTER UPDATE OF agency_id ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (old.agency_id <> new.agency_id)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'users';
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'users', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER users_version;
--> statement-breakpoint
CREATE TRIGGER users_version AFTER UPDATE ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.version = old.version AND (old.agency_id IS NOT new.agency_id OR old.name IS NOT new.name OR old.email IS NOT new.email OR old.role IS NOT new.role OR old.manager_id IS NOT new.manager_id OR old.is_active IS NOT new.is_active OR old.updated_at IS NOT new.updated_at))
BEGIN
  UPDATE users SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
DROP TRIGGER webhook_deliveries_sandbox_drop;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_sandbox_drop AFTER UPDATE OF leased_until ON webhook_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.leased_until IS NOT NULL AND new.status = 'pending'
  AND (SELECT sandbox_drop_next FROM webhook_endpoints WHERE id = new.endpoint_id) > 0)
BEGIN
  UPDATE webhook_endpoints SET sandbox_drop_next = sandbox_drop_next - 1 WHERE id = new.endpoint_id;
  INSERT INTO webhook_delivery_attempts (id, delivery_id, attempt, attempted_at, response_status, latency_ms, error)
  VALUES ('wha_' || lower(hex(randomblob(11))), new.id, new.attempts + 1,
    strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL, 0, 'dropped by sandbox helper');
  UPDATE webhook_deliveries SET status = 'dead', attempts = new.attempts + 1, last_response_status = NULL,
    last_error = 'dropped by sandbox helper', leased_until = NULL, updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
  WHERE id = new.id;
END;
--> statement-breakpoint
DROP TRIGGER webhook_deliveries_usage_delete;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_usage_delete AFTER DELETE ON webhook_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'webhook_deliveries';
END;
--> statement-breakpoint
DROP TRIGGER webhook_deliveries_usage_insert;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_usage_insert AFTER INSERT ON webhook_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'webhook_deliveries', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER webhook_delivery_attempts_usage_delete;
--> statement-breakpoint
CREATE TRIGGER webhook_delivery_attempts_usage_delete AFTER DELETE ON webhook_delivery_attempts
WHEN NOT EXISTS (SELECT 1 FROM move_mute)
BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id) AND resource = 'webhook_attempts';
END;
--> statement-breakpoint
DROP TRIGGER webhook_delivery_attempts_usage_insert;
--> statement-breakpoint
CREATE TRIGGER webhook_delivery_attempts_usage_insert AFTER INSERT ON webhook_delivery_attempts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND ((SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id) IS NOT NULL)
BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES ((SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id), 'webhook_attempts', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
DROP TRIGGER webhook_endpoints_version;
--> statement-breakpoint
CREATE TRIGGER webhook_endpoints_version AFTER UPDATE ON webhook_endpoints
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND (new.version = old.version AND (old.url IS NOT new.url OR old.event_types IS NOT new.event_types OR old.description IS NOT new.description OR old.is_active IS NOT new.is_active))
BEGIN
  UPDATE webhook_endpoints SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
CREATE TRIGGER agencies_leaving_insert BEFORE INSERT ON agencies
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agencies', json_array(new.id) FROM agency_departures WHERE agency_id = new.id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agencies_leaving_update BEFORE UPDATE ON agencies
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.id, new.id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.id IS NOT new.id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agencies', json_array(old.id) FROM agency_departures WHERE agency_id = old.id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agencies_leaving_delete BEFORE DELETE ON agencies
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agencies', json_array(old.id) FROM agency_departures WHERE agency_id = old.id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER users_leaving_insert BEFORE INSERT ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'users', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER users_leaving_update BEFORE UPDATE ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'users', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER users_leaving_delete BEFORE DELETE ON users
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'users', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER sessions_leaving_insert BEFORE INSERT ON sessions
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = new.user_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = new.user_id) AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'sessions', json_array(new.token_hash) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = new.user_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER sessions_leaving_update BEFORE UPDATE ON sessions
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN ((SELECT agency_id FROM users WHERE id = old.user_id), (SELECT agency_id FROM users WHERE id = new.user_id)))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE (SELECT agency_id FROM users WHERE id = old.user_id) IS NOT (SELECT agency_id FROM users WHERE id = new.user_id);
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = old.user_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'sessions', json_array(old.token_hash) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = old.user_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER sessions_leaving_delete BEFORE DELETE ON sessions
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = old.user_id))
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = old.user_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'sessions', json_array(old.token_hash) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM users WHERE id = old.user_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER api_keys_leaving_insert BEFORE INSERT ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'api_keys', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER api_keys_leaving_update BEFORE UPDATE ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'api_keys', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER api_keys_leaving_delete BEFORE DELETE ON api_keys
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'api_keys', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER api_key_secrets_leaving_insert BEFORE INSERT ON api_key_secrets
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = new.key_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = new.key_id) AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'api_key_secrets', json_array(new.hash) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = new.key_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER api_key_secrets_leaving_update BEFORE UPDATE ON api_key_secrets
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN ((SELECT agency_id FROM api_keys WHERE id = old.key_id), (SELECT agency_id FROM api_keys WHERE id = new.key_id)))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE (SELECT agency_id FROM api_keys WHERE id = old.key_id) IS NOT (SELECT agency_id FROM api_keys WHERE id = new.key_id);
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = old.key_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'api_key_secrets', json_array(old.hash) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = old.key_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER api_key_secrets_leaving_delete BEFORE DELETE ON api_key_secrets
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = old.key_id))
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = old.key_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'api_key_secrets', json_array(old.hash) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM api_keys WHERE id = old.key_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agency_quotas_leaving_insert BEFORE INSERT ON agency_quotas
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agency_quotas', json_array(new.agency_id, new.resource) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agency_quotas_leaving_update BEFORE UPDATE ON agency_quotas
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agency_quotas', json_array(old.agency_id, old.resource) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agency_quotas_leaving_delete BEFORE DELETE ON agency_quotas
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agency_quotas', json_array(old.agency_id, old.resource) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agency_usage_leaving_insert BEFORE INSERT ON agency_usage
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agency_usage', json_array(new.agency_id, new.resource) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agency_usage_leaving_update BEFORE UPDATE ON agency_usage
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agency_usage', json_array(old.agency_id, old.resource) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER agency_usage_leaving_delete BEFORE DELETE ON agency_usage
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'agency_usage', json_array(old.agency_id, old.resource) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER subscriptions_leaving_insert BEFORE INSERT ON subscriptions
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'subscriptions', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER subscriptions_leaving_update BEFORE UPDATE ON subscriptions
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'subscriptions', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER subscriptions_leaving_delete BEFORE DELETE ON subscriptions
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'subscriptions', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER listings_leaving_insert BEFORE INSERT ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'listings', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER listings_leaving_update BEFORE UPDATE ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'listings', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER listings_leaving_delete BEFORE DELETE ON listings
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'listings', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER listing_orders_leaving_insert BEFORE INSERT ON listing_orders
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'listing_orders', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER listing_orders_leaving_update BEFORE UPDATE ON listing_orders
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'listing_orders', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER listing_orders_leaving_delete BEFORE DELETE ON listing_orders
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'listing_orders', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER appointments_leaving_insert BEFORE INSERT ON appointments
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'appointments', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER appointments_leaving_update BEFORE UPDATE ON appointments
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'appointments', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER appointments_leaving_delete BEFORE DELETE ON appointments
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'appointments', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_uploads_leaving_insert BEFORE INSERT ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_uploads', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_uploads_leaving_update BEFORE UPDATE ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_uploads', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_uploads_leaving_delete BEFORE DELETE ON media_uploads
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_uploads', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_upload_parts_leaving_insert BEFORE INSERT ON media_upload_parts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = new.upload_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = new.upload_id) AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_upload_parts', json_array(new.upload_id, new.part_number) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = new.upload_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_upload_parts_leaving_update BEFORE UPDATE ON media_upload_parts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN ((SELECT agency_id FROM media_uploads WHERE id = old.upload_id), (SELECT agency_id FROM media_uploads WHERE id = new.upload_id)))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE (SELECT agency_id FROM media_uploads WHERE id = old.upload_id) IS NOT (SELECT agency_id FROM media_uploads WHERE id = new.upload_id);
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = old.upload_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_upload_parts', json_array(old.upload_id, old.part_number) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = old.upload_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_upload_parts_leaving_delete BEFORE DELETE ON media_upload_parts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = old.upload_id))
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = old.upload_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_upload_parts', json_array(old.upload_id, old.part_number) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_uploads WHERE id = old.upload_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_deliveries_leaving_insert BEFORE INSERT ON media_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_deliveries', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_deliveries_leaving_update BEFORE UPDATE ON media_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_deliveries', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_deliveries_leaving_delete BEFORE DELETE ON media_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_deliveries', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_delivery_files_leaving_insert BEFORE INSERT ON media_delivery_files
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = new.delivery_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = new.delivery_id) AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_delivery_files', json_array(new.delivery_id, new.upload_id) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = new.delivery_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_delivery_files_leaving_update BEFORE UPDATE ON media_delivery_files
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN ((SELECT agency_id FROM media_deliveries WHERE id = old.delivery_id), (SELECT agency_id FROM media_deliveries WHERE id = new.delivery_id)))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE (SELECT agency_id FROM media_deliveries WHERE id = old.delivery_id) IS NOT (SELECT agency_id FROM media_deliveries WHERE id = new.delivery_id);
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = old.delivery_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_delivery_files', json_array(old.delivery_id, old.upload_id) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = old.delivery_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER media_delivery_files_leaving_delete BEFORE DELETE ON media_delivery_files
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = old.delivery_id))
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = old.delivery_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'media_delivery_files', json_array(old.delivery_id, old.upload_id) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM media_deliveries WHERE id = old.delivery_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER delivery_destinations_leaving_insert BEFORE INSERT ON delivery_destinations
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'delivery_destinations', json_array(new.user_id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER delivery_destinations_leaving_update BEFORE UPDATE ON delivery_destinations
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'delivery_destinations', json_array(old.user_id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER delivery_destinations_leaving_delete BEFORE DELETE ON delivery_destinations
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'delivery_destinations', json_array(old.user_id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER calendar_connections_leaving_insert BEFORE INSERT ON calendar_connections
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'calendar_connections', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER calendar_connections_leaving_update BEFORE UPDATE ON calendar_connections
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'calendar_connections', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER calendar_connections_leaving_delete BEFORE DELETE ON calendar_connections
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'calendar_connections', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER calendar_discrepancies_leaving_insert BEFORE INSERT ON calendar_discrepancies
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'calendar_discrepancies', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER calendar_discrepancies_leaving_update BEFORE UPDATE ON calendar_discrepancies
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'calendar_discrepancies', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER calendar_discrepancies_leaving_delete BEFORE DELETE ON calendar_discrepancies
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'calendar_discrepancies', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER sandbox_calendar_blocks_leaving_insert BEFORE INSERT ON sandbox_calendar_blocks
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'sandbox_calendar_blocks', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER sandbox_calendar_blocks_leaving_update BEFORE UPDATE ON sandbox_calendar_blocks
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'sandbox_calendar_blocks', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER sandbox_calendar_blocks_leaving_delete BEFORE DELETE ON sandbox_calendar_blocks
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'sandbox_calendar_blocks', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tours_leaving_insert BEFORE INSERT ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tours', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tours_leaving_update BEFORE UPDATE ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tours', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tours_leaving_delete BEFORE DELETE ON tours
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tours', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_counts_leaving_insert BEFORE INSERT ON tour_counts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_counts', json_array(new.agency_id, new.status) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_counts_leaving_update BEFORE UPDATE ON tour_counts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_counts', json_array(old.agency_id, old.status) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_counts_leaving_delete BEFORE DELETE ON tour_counts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_counts', json_array(old.agency_id, old.status) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_leaving_insert BEFORE INSERT ON tour_search_grams
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_search_grams', json_array(new.agency_id, new.gram, new.tour_id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_leaving_update BEFORE UPDATE ON tour_search_grams
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_search_grams', json_array(old.agency_id, old.gram, old.tour_id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_leaving_delete BEFORE DELETE ON tour_search_grams
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_search_grams', json_array(old.agency_id, old.gram, old.tour_id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_gram_counts_leaving_insert BEFORE INSERT ON tour_search_gram_counts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_search_gram_counts', json_array(new.agency_id, new.gram) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_gram_counts_leaving_update BEFORE UPDATE ON tour_search_gram_counts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_search_gram_counts', json_array(old.agency_id, old.gram) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_gram_counts_leaving_delete BEFORE DELETE ON tour_search_gram_counts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'tour_search_gram_counts', json_array(old.agency_id, old.gram) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_endpoints_leaving_insert BEFORE INSERT ON webhook_endpoints
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_endpoints', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_endpoints_leaving_update BEFORE UPDATE ON webhook_endpoints
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_endpoints', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_endpoints_leaving_delete BEFORE DELETE ON webhook_endpoints
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_endpoints', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER events_leaving_insert BEFORE INSERT ON events
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'events', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER events_leaving_update BEFORE UPDATE ON events
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'events', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER events_leaving_delete BEFORE DELETE ON events
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'events', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER event_sequences_leaving_insert BEFORE INSERT ON event_sequences
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'event_sequences', json_array(new.agency_id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER event_sequences_leaving_update BEFORE UPDATE ON event_sequences
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'event_sequences', json_array(old.agency_id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER event_sequences_leaving_delete BEFORE DELETE ON event_sequences
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'event_sequences', json_array(old.agency_id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_leaving_insert BEFORE INSERT ON webhook_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_deliveries', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_leaving_update BEFORE UPDATE ON webhook_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_deliveries', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_deliveries_leaving_delete BEFORE DELETE ON webhook_deliveries
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_deliveries', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_delivery_attempts_leaving_insert BEFORE INSERT ON webhook_delivery_attempts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id) AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_delivery_attempts', json_array(new.id) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_delivery_attempts_leaving_update BEFORE UPDATE ON webhook_delivery_attempts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN ((SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id), (SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id)))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id) IS NOT (SELECT agency_id FROM webhook_deliveries WHERE id = new.delivery_id);
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_delivery_attempts', json_array(old.id) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_delivery_attempts_leaving_delete BEFORE DELETE ON webhook_delivery_attempts
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id))
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id);
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_delivery_attempts', json_array(old.id) FROM agency_departures WHERE agency_id = (SELECT agency_id FROM webhook_deliveries WHERE id = old.delivery_id) AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_leaving_insert BEFORE INSERT ON idempotency_marks
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'idempotency_marks', json_array(new.agency_id, new.idem_key) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_leaving_update BEFORE UPDATE ON idempotency_marks
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'idempotency_marks', json_array(old.agency_id, old.idem_key) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER idempotency_marks_leaving_delete BEFORE DELETE ON idempotency_marks
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'idempotency_marks', json_array(old.agency_id, old.idem_key) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
