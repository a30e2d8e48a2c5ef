CREATE TABLE `sandbox_calendar_blocks` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`user_id` text NOT NULL,
	`event_id` text NOT NULL,
	`starts_at` text NOT NULL,
	`ends_at` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sandbox_calendar_blocks_event` ON `sandbox_calendar_blocks` (`user_id`,`event_id`);--> statement-breakpoint
CREATE INDEX `sandbox_calendar_blocks_user` ON `sandbox_calendar_blocks` (`user_id`,`starts_at`);