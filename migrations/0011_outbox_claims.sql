ALTER TABLE `events` ADD `claimed_until` text;
