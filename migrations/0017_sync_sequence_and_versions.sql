CREATE TABLE `event_sequences` (
	`agency_id` text PRIMARY KEY NOT NULL,
	`last` integer NOT NULL
);
--> statement-breakpoint
ALTER TABLE `events` ADD `sequence` integer;--> statement-breakpoint
ALTER TABLE `events` ADD `resource_type` text;--> statement-breakpoint
ALTER TABLE `events` ADD `resource_id` text;--> statement-breakpoint
ALTER TABLE `events` ADD `resource_version` integer;--> statement-breakpoint
CREATE UNIQUE INDEX `events_agency_sequence` ON `events` (`agency_id`,`sequence`);--> statement-breakpoint
ALTER TABLE `listing_orders` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `listings` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `tours` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `users` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `version` integer DEFAULT 1 NOT NULL;--> statement-breakpoint
-- Events written before the sequence existed take it in the order they were written.
UPDATE events SET sequence = r.n
FROM (SELECT id, row_number() OVER (PARTITION BY agency_id ORDER BY created_at, id) AS n FROM events) AS r
WHERE events.id = r.id;
--> statement-breakpoint
INSERT INTO event_sequences (agency_id, last) SELECT agency_id, max(sequence) FROM events GROUP BY agency_id;
--> statement-breakpoint
-- Every event takes the next number of its agency, in the statement that inserts it: a
-- batch that fails takes none, and D1's one writer hands them out one at a time.
CREATE TRIGGER events_sequence AFTER INSERT ON events BEGIN
  INSERT INTO event_sequences (agency_id, last) VALUES (new.agency_id, 1)
  ON CONFLICT (agency_id) DO UPDATE SET last = last + 1;
  UPDATE events SET sequence = (SELECT last FROM event_sequences WHERE agency_id = new.agency_id)
  WHERE rowid = new.rowid;
END;
--> statement-breakpoint
-- A resource's version rises with every change of what a reader sees of it, in the same
-- statement, whatever code writes it. A write that sets `version` itself is left alone.
CREATE TRIGGER listings_version AFTER UPDATE ON listings
WHEN new.version = old.version AND (old.address IS NOT new.address OR old.status IS NOT new.status OR old.is_activated IS NOT new.is_activated OR old.owner_user_id IS NOT new.owner_user_id OR old.agent_one_id IS NOT new.agent_one_id OR old.agent_two_id IS NOT new.agent_two_id OR old.floorplan_urls IS NOT new.floorplan_urls OR old.matterport_url IS NOT new.matterport_url OR old.cancelled_at IS NOT new.cancelled_at OR old.updated_at IS NOT new.updated_at) BEGIN
  UPDATE listings SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
CREATE TRIGGER users_version AFTER UPDATE ON users
WHEN new.version = old.version AND (old.agency_id IS NOT new.agency_id OR old.name IS NOT new.name OR old.email IS NOT new.email OR old.role IS NOT new.role OR old.manager_id IS NOT new.manager_id OR old.is_active IS NOT new.is_active OR old.updated_at IS NOT new.updated_at) BEGIN
  UPDATE users SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
CREATE TRIGGER tours_version AFTER UPDATE ON tours
WHEN new.version = old.version AND (old.address IS NOT new.address OR old.city IS NOT new.city OR old.state IS NOT new.state OR old.zipcode IS NOT new.zipcode OR old.status IS NOT new.status OR old.mls_number IS NOT new.mls_number OR old.price IS NOT new.price OR old.bedrooms IS NOT new.bedrooms OR old.bathrooms IS NOT new.bathrooms OR old.sqft IS NOT new.sqft OR old.description IS NOT new.description OR old.images IS NOT new.images OR old.virtual_tour_url IS NOT new.virtual_tour_url OR old.updated_at IS NOT new.updated_at) BEGIN
  UPDATE tours SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
CREATE TRIGGER listing_orders_version AFTER UPDATE ON listing_orders
WHEN new.version = old.version AND (old.kind IS NOT new.kind OR old.invoice_id IS NOT new.invoice_id OR old.amount_minor IS NOT new.amount_minor OR old.currency IS NOT new.currency OR old.status IS NOT new.status OR old.provider_reference IS NOT new.provider_reference OR old.issued_at IS NOT new.issued_at OR old.paid_at IS NOT new.paid_at) BEGIN
  UPDATE listing_orders SET version = old.version + 1 WHERE rowid = new.rowid;
END;
--> statement-breakpoint
CREATE TRIGGER webhook_endpoints_version AFTER UPDATE ON webhook_endpoints
WHEN new.version = old.version AND (old.url IS NOT new.url OR old.event_types IS NOT new.event_types OR old.description IS NOT new.description OR old.is_active IS NOT new.is_active) BEGIN
  UPDATE webhook_endpoints SET version = old.version + 1 WHERE rowid = new.rowid;
END;
