CREATE TABLE `secret_directory` (
	`hash` text PRIMARY KEY NOT NULL,
	`key_id` text NOT NULL,
	`agency_id` text NOT NULL
);
