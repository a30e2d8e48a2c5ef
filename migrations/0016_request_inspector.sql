ALTER TABLE `idempotency_marks` ADD `request_id` text;--> statement-breakpoint
ALTER TABLE `idempotency_marks` ADD `operation_id` text;--> statement-breakpoint
ALTER TABLE `idempotency_marks` ADD `method` text;--> statement-breakpoint
ALTER TABLE `idempotency_marks` ADD `path` text;--> statement-breakpoint
ALTER TABLE `idempotency_marks` ADD `trace_parent` text;--> statement-breakpoint
CREATE INDEX `idempotency_marks_request` ON `idempotency_marks` (`request_id`);--> statement-breakpoint
CREATE INDEX `events_trace` ON `events` (`agency_id`,`trace_parent`,`created_at`,`id`) WHERE "events"."trace_parent" IS NOT NULL;