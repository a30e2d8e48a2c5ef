CREATE TABLE `agency_shards` (
	`agency_id` text PRIMARY KEY NOT NULL,
	`shard` text NOT NULL,
	`created_at` text DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) NOT NULL
);
--> statement-breakpoint
CREATE INDEX `agency_shards_shard` ON `agency_shards` (`shard`,`agency_id`);--> statement-breakpoint
-- Every agency so far lives on the first shard, which is also the control database (on the
-- other shards the agencies table is still empty, so this inserts nothing there).
INSERT INTO `agency_shards` (`agency_id`, `shard`) SELECT `id`, 'shard-1' FROM `agencies`;
