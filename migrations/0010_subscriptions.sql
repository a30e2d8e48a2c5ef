CREATE TABLE `subscriptions` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`status` text NOT NULL,
	`plan` text,
	`started_at` text,
	`cancelled_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `subscriptions_agency` ON `subscriptions` (`agency_id`);