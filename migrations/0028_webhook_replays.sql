CREATE TABLE `webhook_replays` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`status` text DEFAULT 'running' NOT NULL,
	`from_sequence` integer NOT NULL,
	`to_sequence` integer NOT NULL,
	`only_failed` integer DEFAULT false NOT NULL,
	`cursor` integer NOT NULL,
	`events_total` integer NOT NULL,
	`events_sent` integer DEFAULT 0 NOT NULL,
	`events_skipped` integer DEFAULT 0 NOT NULL,
	`reason` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`finished_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_replays_running` ON `webhook_replays` (`endpoint_id`) WHERE "webhook_replays"."status" = 'running';--> statement-breakpoint
CREATE INDEX `webhook_replays_agency_page` ON `webhook_replays` (`agency_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_replays_finished` ON `webhook_replays` (`finished_at`);--> statement-breakpoint
DROP INDEX `webhook_deliveries_event_endpoint`;--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `replay_id` text;--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_replay_event` ON `webhook_deliveries` (`event_id`,`endpoint_id`,`replay_id`) WHERE "webhook_deliveries"."replay_id" IS NOT NULL;--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_event_endpoint` ON `webhook_deliveries` (`event_id`,`endpoint_id`) WHERE "webhook_deliveries"."replay_id" IS NULL;--> statement-breakpoint
CREATE TRIGGER webhook_replays_leaving_insert BEFORE INSERT ON webhook_replays
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = new.agency_id)
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') FROM agency_departures WHERE agency_id = new.agency_id AND state <> 'copying';
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_replays', json_array(new.id) FROM agency_departures WHERE agency_id = new.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_replays_leaving_update BEFORE UPDATE ON webhook_replays
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id IN (old.agency_id, new.agency_id))
BEGIN
  SELECT RAISE(ABORT, 'agency_moving') WHERE old.agency_id IS NOT new.agency_id;
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_replays', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
--> statement-breakpoint
CREATE TRIGGER webhook_replays_leaving_delete BEFORE DELETE ON webhook_replays
WHEN NOT EXISTS (SELECT 1 FROM move_mute) AND EXISTS (SELECT 1 FROM agency_departures WHERE agency_id = old.agency_id)
BEGIN
  SELECT CASE state WHEN 'copying' THEN NULL WHEN 'fenced' THEN RAISE(ABORT, 'agency_moving') ELSE RAISE(IGNORE) END
    FROM agency_departures WHERE agency_id = old.agency_id;
  INSERT INTO move_journal (agency_id, table_name, row_key)
    SELECT agency_id, 'webhook_replays', json_array(old.id) FROM agency_departures WHERE agency_id = old.agency_id AND state = 'copying';
END;
