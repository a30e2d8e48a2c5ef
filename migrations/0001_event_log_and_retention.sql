DROP INDEX `events_agency`;--> statement-breakpoint
CREATE INDEX `events_agency_page` ON `events` (`agency_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `events_agency_type_page` ON `events` (`agency_id`,`event_type`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `events_created` ON `events` (`created_at`);--> statement-breakpoint
ALTER TABLE `webhook_deliveries` ADD `replayed_at` text;--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint_page` ON `webhook_deliveries` (`endpoint_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_endpoint_status_page` ON `webhook_deliveries` (`endpoint_id`,`status`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `webhook_deliveries_status_updated` ON `webhook_deliveries` (`status`,`updated_at`);