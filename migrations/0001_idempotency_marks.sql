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
CREATE INDEX `idempotency_marks_expiry` ON `idempotency_marks` (`expires_at`);