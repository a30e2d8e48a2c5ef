CREATE TABLE `calendar_connections` (
	`id` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`agency_id` text NOT NULL,
	`provider` text NOT NULL,
	`calendar_id` text,
	`credentials_sealed` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `calendar_connections_user` ON `calendar_connections` (`user_id`);
--> statement-breakpoint
CREATE TABLE `calendar_discrepancies` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`subject_type` text NOT NULL,
	`subject_id` text NOT NULL,
	`kind` text NOT NULL,
	`detected_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`resolved_at` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `calendar_discrepancies_open` ON `calendar_discrepancies` (`subject_type`,`subject_id`,`kind`) WHERE `resolved_at` IS NULL;
