ALTER TABLE `webhook_endpoints` ADD `filters` text;--> statement-breakpoint
ALTER TABLE `webhook_endpoints` ADD `payload` text DEFAULT 'full' NOT NULL;