CREATE TABLE `media_upload_parts` (
	`upload_id` text NOT NULL,
	`part_number` integer NOT NULL,
	`status` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`etag` text,
	`claimed_at` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	PRIMARY KEY(`upload_id`, `part_number`),
	FOREIGN KEY (`upload_id`) REFERENCES `media_uploads`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
ALTER TABLE `media_uploads` ADD `multipart_id` text;--> statement-breakpoint
ALTER TABLE `media_uploads` ADD `part_size_bytes` integer;