CREATE TABLE `agency_quotas` (
	`agency_id` text NOT NULL,
	`resource` text NOT NULL,
	`quota` integer NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	PRIMARY KEY(`agency_id`, `resource`),
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `agency_usage` (
	`agency_id` text NOT NULL,
	`resource` text NOT NULL,
	`used` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`agency_id`, `resource`)
);
--> statement-breakpoint
CREATE TABLE `quota_defaults` (
	`resource` text PRIMARY KEY NOT NULL,
	`quota` integer NOT NULL
);
--> statement-breakpoint
-- Quotas per agency: agency_usage is kept exact by the triggers below, in the statement that
-- writes each row; a BEFORE trigger refuses (RAISE ABORT 'agency_quota_exceeded:<resource>') the
-- write that would take usage past the agency's quota (its override, else the default), so the
-- whole batch fails and nothing is stored. Counts are rows; *_bytes are the bytes of the fields a
-- client chooses the size of. agency_id changes only on users (a move), which moves the count.
-- Every lookup is by primary key.
INSERT INTO quota_defaults (resource, quota) VALUES
  ('tours', 100000),
  ('tour_bytes', 268435456),
  ('listings', 100000),
  ('listing_bytes', 268435456),
  ('media_uploads', 2000000),
  ('api_keys', 500),
  ('users', 10000),
  ('appointments', 1000000);
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'tours', count(*) FROM tours GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'listings', count(*) FROM listings GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'media_uploads', count(*) FROM media_uploads GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'api_keys', count(*) FROM api_keys GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'users', count(*) FROM users GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'appointments', count(*) FROM appointments GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'tour_bytes', sum(
    coalesce(length(CAST(tours.address AS BLOB)), 0)
    + coalesce(length(CAST(tours.city AS BLOB)), 0)
    + coalesce(length(CAST(tours.state AS BLOB)), 0)
    + coalesce(length(CAST(tours.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(tours.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(tours.description AS BLOB)), 0)
    + coalesce(length(CAST(tours.images AS BLOB)), 0)
    + coalesce(length(CAST(tours.virtual_tour_url AS BLOB)), 0)) FROM tours GROUP BY agency_id;
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'listing_bytes', sum(
    coalesce(length(CAST(listings.address AS BLOB)), 0)
    + coalesce(length(CAST(listings.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(listings.matterport_url AS BLOB)), 0)) FROM listings GROUP BY agency_id;
--> statement-breakpoint
CREATE TRIGGER tours_quota BEFORE INSERT ON tours
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tours'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tours'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tours'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tours');
END;
--> statement-breakpoint
CREATE TRIGGER tours_usage_insert AFTER INSERT ON tours BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'tours', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER tours_usage_delete AFTER DELETE ON tours BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'tours';
END;
--> statement-breakpoint
CREATE TRIGGER listings_quota BEFORE INSERT ON listings
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'listings'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'listings'),
    (SELECT quota FROM quota_defaults WHERE resource = 'listings'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:listings');
END;
--> statement-breakpoint
CREATE TRIGGER listings_usage_insert AFTER INSERT ON listings BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'listings', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER listings_usage_delete AFTER DELETE ON listings BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'listings';
END;
--> statement-breakpoint
CREATE TRIGGER media_uploads_quota BEFORE INSERT ON media_uploads
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'media_uploads'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'media_uploads'),
    (SELECT quota FROM quota_defaults WHERE resource = 'media_uploads'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:media_uploads');
END;
--> statement-breakpoint
CREATE TRIGGER media_uploads_usage_insert AFTER INSERT ON media_uploads BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'media_uploads', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER media_uploads_usage_delete AFTER DELETE ON media_uploads BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'media_uploads';
END;
--> statement-breakpoint
CREATE TRIGGER api_keys_quota BEFORE INSERT ON api_keys
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'api_keys'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'api_keys'),
    (SELECT quota FROM quota_defaults WHERE resource = 'api_keys'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:api_keys');
END;
--> statement-breakpoint
CREATE TRIGGER api_keys_usage_insert AFTER INSERT ON api_keys BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'api_keys', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER api_keys_usage_delete AFTER DELETE ON api_keys BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'api_keys';
END;
--> statement-breakpoint
CREATE TRIGGER users_quota BEFORE INSERT ON users
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'users'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'users'),
    (SELECT quota FROM quota_defaults WHERE resource = 'users'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:users');
END;
--> statement-breakpoint
CREATE TRIGGER users_usage_insert AFTER INSERT ON users BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'users', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER users_usage_delete AFTER DELETE ON users BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'users';
END;
--> statement-breakpoint
-- A user who moves to another agency (with their subtree, row by row) counts there from then on.
-- The move is not refused by the new agency's quota: it brings no new data into the database.
CREATE TRIGGER users_usage_move AFTER UPDATE OF agency_id ON users WHEN old.agency_id <> new.agency_id BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'users';
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'users', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER appointments_quota BEFORE INSERT ON appointments
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'appointments'), 0) + 1 > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'appointments'),
    (SELECT quota FROM quota_defaults WHERE resource = 'appointments'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:appointments');
END;
--> statement-breakpoint
CREATE TRIGGER appointments_usage_insert AFTER INSERT ON appointments BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'appointments', 1)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER appointments_usage_delete AFTER DELETE ON appointments BEGIN
  UPDATE agency_usage SET used = used - 1 WHERE agency_id = old.agency_id AND resource = 'appointments';
END;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_quota BEFORE INSERT ON tours
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'tour_bytes'), 0) + (
    coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.city AS BLOB)), 0)
    + coalesce(length(CAST(new.state AS BLOB)), 0)
    + coalesce(length(CAST(new.zipcode AS BLOB)), 0)
    + coalesce(length(CAST(new.mls_number AS BLOB)), 0)
    + coalesce(length(CAST(new.description AS BLOB)), 0)
    + coalesce(length(CAST(new.images AS BLOB)), 0)
    + coalesce(length(CAST(new.virtual_tour_url AS BLOB)), 0)) > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'tour_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_bytes'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_bytes');
END;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_quota_update BEFORE UPDATE OF address, city, state, zipcode, mls_number, description, images, virtual_tour_url ON tours
WHEN (coalesce(length(CAST(new.address AS BLOB)), 0)
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
    (SELECT quota FROM quota_defaults WHERE resource = 'tour_bytes'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:tour_bytes');
END;
--> statement-breakpoint
CREATE TRIGGER tours_bytes_insert AFTER INSERT ON tours BEGIN
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
CREATE TRIGGER tours_bytes_update AFTER UPDATE OF address, city, state, zipcode, mls_number, description, images, virtual_tour_url ON tours BEGIN
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
CREATE TRIGGER tours_bytes_delete AFTER DELETE ON tours BEGIN
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
CREATE TRIGGER listings_bytes_quota BEFORE INSERT ON listings
WHEN coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'listing_bytes'), 0) + (
    coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'listing_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'listing_bytes'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:listing_bytes');
END;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_quota_update BEFORE UPDATE OF address, floorplan_urls, matterport_url ON listings
WHEN (coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) > (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0))
  AND coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'listing_bytes'), 0) + (coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0)) > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'listing_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'listing_bytes'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:listing_bytes');
END;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_insert AFTER INSERT ON listings BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'listing_bytes',
    coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0))
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_update AFTER UPDATE OF address, floorplan_urls, matterport_url ON listings BEGIN
  UPDATE agency_usage SET used = used + (coalesce(length(CAST(new.address AS BLOB)), 0)
    + coalesce(length(CAST(new.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(new.matterport_url AS BLOB)), 0)) - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0))
  WHERE agency_id = new.agency_id AND resource = 'listing_bytes';
END;
--> statement-breakpoint
CREATE TRIGGER listings_bytes_delete AFTER DELETE ON listings BEGIN
  UPDATE agency_usage SET used = used - (coalesce(length(CAST(old.address AS BLOB)), 0)
    + coalesce(length(CAST(old.floorplan_urls AS BLOB)), 0)
    + coalesce(length(CAST(old.matterport_url AS BLOB)), 0))
  WHERE agency_id = old.agency_id AND resource = 'listing_bytes';
END;
