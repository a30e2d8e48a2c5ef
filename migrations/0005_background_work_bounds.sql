CREATE TABLE `job_cursors` (
	`name` text PRIMARY KEY NOT NULL,
	`position` text,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
ALTER TABLE `calendar_connections` ADD `last_error` text;--> statement-breakpoint
ALTER TABLE `calendar_connections` ADD `last_checked_at` text;--> statement-breakpoint
CREATE INDEX `media_deliveries_unfinished` ON `media_deliveries` (`status`,`updated_at`);