ALTER TABLE `media_uploads` ADD `object_etag` text;--> statement-breakpoint
CREATE INDEX `api_keys_minter` ON `api_keys` (`minted_by_user_id`,`id`);