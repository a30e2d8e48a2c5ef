CREATE TABLE `media_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`listing_id` text,
	`asset_type` text NOT NULL,
	`content_type` text NOT NULL,
	`size_bytes` integer NOT NULL,
	`filename` text,
	`object_key` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`created_by_user_id` text NOT NULL,
	`expires_at` text NOT NULL,
	`completed_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`listing_id`) REFERENCES `listings`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `media_uploads_object_key` ON `media_uploads` (`object_key`);
--> statement-breakpoint
CREATE INDEX `media_uploads_listing` ON `media_uploads` (`listing_id`,`status`,`created_at`);
--> statement-breakpoint
CREATE TABLE `delivery_destinations` (
	`user_id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`provider` text DEFAULT 's3' NOT NULL,
	`endpoint_url` text NOT NULL,
	`bucket` text NOT NULL,
	`region` text NOT NULL,
	`addressing_style` text DEFAULT 'path' NOT NULL,
	`access_key_id` text NOT NULL,
	`secret_access_key_sealed` text NOT NULL,
	`path_prefix` text DEFAULT '' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE TABLE `media_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`listing_id` text NOT NULL,
	`destination_user_id` text NOT NULL,
	`trigger` text NOT NULL,
	`status` text DEFAULT 'queued' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`files_total` integer DEFAULT 0 NOT NULL,
	`files_delivered` integer DEFAULT 0 NOT NULL,
	`files_failed` integer DEFAULT 0 NOT NULL,
	`error` text,
	`finished_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`listing_id`) REFERENCES `listings`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `media_deliveries_listing` ON `media_deliveries` (`listing_id`,`created_at`);
--> statement-breakpoint
CREATE TABLE `media_delivery_files` (
	`delivery_id` text NOT NULL,
	`upload_id` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`permanent` integer DEFAULT false NOT NULL,
	`error` text,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	PRIMARY KEY(`delivery_id`, `upload_id`),
	FOREIGN KEY (`delivery_id`) REFERENCES `media_deliveries`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`upload_id`) REFERENCES `media_uploads`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `media_delivery_files_upload` ON `media_delivery_files` (`upload_id`,`status`);
