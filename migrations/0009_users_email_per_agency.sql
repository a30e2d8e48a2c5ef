DROP INDEX `users_email_unique`;--> statement-breakpoint
CREATE UNIQUE INDEX `users_agency_email_unique` ON `users` (`agency_id`,`email`);