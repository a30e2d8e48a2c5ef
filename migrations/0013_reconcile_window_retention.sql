ALTER TABLE `appointments` ADD `closed_at` text;--> statement-breakpoint
CREATE INDEX `appointments_reconcile` ON `appointments` (`agency_id`,`id`) WHERE "appointments"."status" = 'scheduled' AND "appointments"."closed_at" IS NULL AND "appointments"."calendar_event_id" IS NOT NULL;--> statement-breakpoint
CREATE INDEX `appointments_open_end` ON `appointments` (`ends_at`) WHERE "appointments"."status" = 'scheduled' AND "appointments"."closed_at" IS NULL;--> statement-breakpoint
CREATE INDEX `api_key_secrets_deactivated` ON `api_key_secrets` (`deactivated_at`);--> statement-breakpoint
CREATE INDEX `calendar_discrepancies_detected` ON `calendar_discrepancies` (`detected_at`);--> statement-breakpoint
CREATE INDEX `provider_events_received` ON `provider_events` (`received_at`);