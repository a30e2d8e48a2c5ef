CREATE TABLE `agency_departures` (
	`agency_id` text PRIMARY KEY NOT NULL,
	`move_id` text NOT NULL,
	`state` text NOT NULL
);
--> statement-breakpoint
CREATE TABLE `agency_moves` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`from_shard` text NOT NULL,
	`to_shard` text NOT NULL,
	`status` text NOT NULL,
	`step` text NOT NULL,
	`cursor` text,
	`rows_copied` integer DEFAULT 0 NOT NULL,
	`changes_applied` integer DEFAULT 0 NOT NULL,
	`rows_deleted` integer DEFAULT 0 NOT NULL,
	`failures` integer DEFAULT 0 NOT NULL,
	`error` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`switched_at` text,
	`finished_at` text
);
--> statement-breakpoint
CREATE INDEX `agency_moves_agency` ON `agency_moves` (`agency_id`,`created_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `agency_moves_running` ON `agency_moves` (`agency_id`) WHERE "agency_moves"."status" IN ('copying', 'switching');--> statement-breakpoint
CREATE TABLE `move_journal` (
	`seq` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`agency_id` text NOT NULL,
	`table_name` text NOT NULL,
	`row_key` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `move_journal_agency` ON `move_journal` (`agency_id`,`seq`);--> statement-breakpoint
CREATE TABLE `move_mute` (
	`id` integer PRIMARY KEY NOT NULL
);
--> statement-breakpoint
CREATE INDEX `appointments_agency_rows` ON `appointments` (`agency_id`,`id`);--> statement-breakpoint
CREATE INDEX `calendar_connections_agency_rows` ON `calendar_connections` (`agency_id`,`id`);--> statement-breakpoint
CREATE INDEX `calendar_discrepancies_agency_rows` ON `calendar_discrepancies` (`agency_id`,`id`);--> statement-breakpoint
CREATE INDEX `delivery_destinations_agency_rows` ON `delivery_destinations` (`agency_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `listing_orders_agency_rows` ON `listing_orders` (`agency_id`,`id`);--> statement-breakpoint
CREATE INDEX `media_deliveries_agency_rows` ON `media_deliveries` (`agency_id`,`id`);--> statement-breakpoint
CREATE INDEX `media_uploads_agency_rows` ON `media_uploads` (`agency_id`,`id`);--> statement-breakpoint
CREATE INDEX `sandbox_calendar_blocks_agency_rows` ON `sandbox_calendar_blocks` (`agency_id`,`id`);