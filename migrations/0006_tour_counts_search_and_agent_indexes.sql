CREATE TABLE `tour_counts` (
	`agency_id` text NOT NULL,
	`status` text NOT NULL,
	`tours` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`agency_id`, `status`)
);
--> statement-breakpoint
CREATE TABLE `tour_search_gram_counts` (
	`agency_id` text NOT NULL,
	`gram` text NOT NULL,
	`tours` integer DEFAULT 0 NOT NULL,
	PRIMARY KEY(`agency_id`, `gram`)
);
--> statement-breakpoint
CREATE TABLE `tour_search_grams` (
	`agency_id` text NOT NULL,
	`gram` text NOT NULL,
	`tour_id` text NOT NULL,
	PRIMARY KEY(`agency_id`, `gram`, `tour_id`)
);
--> statement-breakpoint
CREATE INDEX `listings_agency_owner_page` ON `listings` (`agency_id`,`owner_user_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `listings_agency_agent_one_page` ON `listings` (`agency_id`,`agent_one_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `listings_agency_agent_two_page` ON `listings` (`agency_id`,`agent_two_id`,`created_at`,`id`);--> statement-breakpoint
CREATE INDEX `tours_agency_status_page` ON `tours` (`agency_id`,`status`,`created_at`,`id`);