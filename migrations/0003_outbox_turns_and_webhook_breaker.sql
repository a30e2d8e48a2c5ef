DROP INDEX `events_pending`;--> statement-breakpoint
ALTER TABLE `events` ADD `attempts` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `events` ADD `last_error` text;--> statement-breakpoint
ALTER TABLE `events` ADD `set_aside_at` text;--> statement-breakpoint
CREATE INDEX `events_unsent` ON `events` (`agency_id`,`created_at`,`id`,`claimed_until`) WHERE "events"."enqueued_at" IS NULL AND "events"."set_aside_at" IS NULL;--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `leased_until` text;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `consecutive_failures` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `paused_until` text;