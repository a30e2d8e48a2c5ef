CREATE TABLE `agencies` (
	`id` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`cancellation_notice_hours` integer DEFAULT 24 NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `api_key_secrets` (
	`hash` text PRIMARY KEY NOT NULL,
	`key_id` text NOT NULL,
	`prefix` text NOT NULL,
	`last4` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`superseded_at` text,
	`deactivated_at` text,
	FOREIGN KEY (`key_id`) REFERENCES `api_keys`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `api_key_secrets_key` ON `api_key_secrets` (`key_id`);--> statement-breakpoint
CREATE TABLE `api_keys` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`minted_by_user_id` text NOT NULL,
	`role` text NOT NULL,
	`mode` text NOT NULL,
	`name` text DEFAULT '' NOT NULL,
	`scopes` text NOT NULL,
	`is_active` integer DEFAULT true NOT NULL,
	`revoked_at` text,
	`expires_at` text,
	`rotation_started_at` text,
	`rate_limit_overrides` text DEFAULT '{}' NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`minted_by_user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `api_keys_agency` ON `api_keys` (`agency_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `appointments` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`listing_id` text NOT NULL,
	`status` text DEFAULT 'scheduled' NOT NULL,
	`starts_at` text NOT NULL,
	`ends_at` text NOT NULL,
	`calendar_event_id` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`listing_id`) REFERENCES `listings`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `appointments_listing` ON `appointments` (`listing_id`,`status`,`starts_at`);--> statement-breakpoint
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
CREATE UNIQUE INDEX `calendar_connections_user` ON `calendar_connections` (`user_id`);--> statement-breakpoint
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
CREATE UNIQUE INDEX `calendar_discrepancies_open` ON `calendar_discrepancies` (`subject_type`,`subject_id`,`kind`) WHERE "calendar_discrepancies"."resolved_at" IS NULL;--> statement-breakpoint
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
CREATE TABLE `events` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`event_type` text NOT NULL,
	`api_version` text NOT NULL,
	`timestamp` integer NOT NULL,
	`data` text NOT NULL,
	`enqueued_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`claimed_until` text
);
--> statement-breakpoint
CREATE INDEX `events_pending` ON `events` (`enqueued_at`,`created_at`);--> statement-breakpoint
CREATE INDEX `events_agency` ON `events` (`agency_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `idempotency_marks` (
	`agency_id` text NOT NULL,
	`idem_key` text NOT NULL,
	`request_hash` text NOT NULL,
	`status` integer NOT NULL,
	`resource_type` text,
	`resource_id` text,
	`expires_at` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	PRIMARY KEY(`agency_id`, `idem_key`)
);
--> statement-breakpoint
CREATE INDEX `idempotency_marks_expiry` ON `idempotency_marks` (`expires_at`);--> statement-breakpoint
CREATE TABLE `listing_orders` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`listing_id` text NOT NULL,
	`kind` text NOT NULL,
	`invoice_id` text,
	`amount_minor` integer NOT NULL,
	`currency` text NOT NULL,
	`status` text NOT NULL,
	`provider_reference` text,
	`issued_at` text,
	`paid_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action,
	FOREIGN KEY (`listing_id`) REFERENCES `listings`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `listing_orders_page` ON `listing_orders` (`listing_id`,`created_at`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `listing_orders_provider_ref` ON `listing_orders` (`kind`,`provider_reference`);--> statement-breakpoint
CREATE TABLE `listings` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`listing_number` text NOT NULL,
	`address` text NOT NULL,
	`status` text DEFAULT 'Coming Soon' NOT NULL,
	`is_activated` integer DEFAULT false NOT NULL,
	`activated_at` text,
	`owner_user_id` text NOT NULL,
	`agent_one_id` text NOT NULL,
	`agent_two_id` text,
	`floorplan_urls` text DEFAULT '[]' NOT NULL,
	`matterport_url` text,
	`cancelled_at` text,
	`cancellation_reason` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `listings_agency_number` ON `listings` (`agency_id`,`listing_number`);--> statement-breakpoint
CREATE INDEX `listings_agency_page` ON `listings` (`agency_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `listings_agency_status_page` ON `listings` (`agency_id`,`status`,`created_at`,`id`);--> statement-breakpoint
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
CREATE INDEX `media_deliveries_listing` ON `media_deliveries` (`listing_id`,`created_at`);--> statement-breakpoint
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
CREATE INDEX `media_delivery_files_upload` ON `media_delivery_files` (`upload_id`,`status`);--> statement-breakpoint
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
CREATE UNIQUE INDEX `media_uploads_object_key` ON `media_uploads` (`object_key`);--> statement-breakpoint
CREATE INDEX `media_uploads_listing` ON `media_uploads` (`listing_id`,`status`,`created_at`);--> statement-breakpoint
CREATE TABLE `provider_events` (
	`id` text PRIMARY KEY NOT NULL,
	`provider` text NOT NULL,
	`type` text NOT NULL,
	`received_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE TABLE `sessions` (
	`token_hash` text PRIMARY KEY NOT NULL,
	`user_id` text NOT NULL,
	`expires_at` text NOT NULL,
	`revoked_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`user_id`) REFERENCES `users`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `sessions_user` ON `sessions` (`user_id`);--> statement-breakpoint
CREATE TABLE `tours` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`tour_number` text NOT NULL,
	`address` text NOT NULL,
	`city` text NOT NULL,
	`state` text NOT NULL,
	`zipcode` text NOT NULL,
	`status` text DEFAULT 'active' NOT NULL,
	`mls_number` text,
	`price` integer,
	`bedrooms` integer,
	`bathrooms` integer,
	`sqft` integer,
	`description` text,
	`images` text DEFAULT '[]' NOT NULL,
	`virtual_tour_url` text,
	`calendar_event_id` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tours_agency_number` ON `tours` (`agency_id`,`tour_number`);--> statement-breakpoint
CREATE INDEX `tours_agency_page` ON `tours` (`agency_id`,`created_at`,`id`);--> statement-breakpoint
CREATE TABLE `users` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`role` text NOT NULL,
	`manager_id` text,
	`name` text NOT NULL,
	`email` text NOT NULL,
	`is_active` integer DEFAULT true NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE UNIQUE INDEX `users_email_unique` ON `users` (`email`);--> statement-breakpoint
CREATE INDEX `users_agency_page` ON `users` (`agency_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `users_manager` ON `users` (`manager_id`);--> statement-breakpoint
CREATE TABLE `webhook_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`event_id` text NOT NULL,
	`endpoint_id` text NOT NULL,
	`agency_id` text NOT NULL,
	`status` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_response_status` integer,
	`last_error` text,
	`delivered_at` text,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_deliveries_event_endpoint` ON `webhook_deliveries` (`event_id`,`endpoint_id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_agency` ON `webhook_deliveries` (`agency_id`,`created_at`);--> statement-breakpoint
CREATE TABLE `webhook_delivery_attempts` (
	`id` text PRIMARY KEY NOT NULL,
	`delivery_id` text NOT NULL,
	`attempt` integer NOT NULL,
	`attempted_at` text NOT NULL,
	`response_status` integer,
	`latency_ms` integer NOT NULL,
	`error` text,
	FOREIGN KEY (`delivery_id`) REFERENCES `webhook_deliveries`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_delivery_attempts_delivery` ON `webhook_delivery_attempts` (`delivery_id`,`attempt`);--> statement-breakpoint
CREATE TABLE `webhook_endpoints` (
	`id` text PRIMARY KEY NOT NULL,
	`agency_id` text NOT NULL,
	`url` text NOT NULL,
	`event_types` text,
	`description` text,
	`secret_sealed` text NOT NULL,
	`is_active` integer DEFAULT true NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	`updated_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL,
	FOREIGN KEY (`agency_id`) REFERENCES `agencies`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `webhook_endpoints_agency_page` ON `webhook_endpoints` (`agency_id`,`created_at`,`id`);