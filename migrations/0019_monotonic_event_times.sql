ALTER TABLE `event_sequences` ADD `last_created_at` text;--> statement-breakpoint
-- An agency's events never go back in time along its sequence: each event's `created_at`
-- is at least its predecessor's. The writers' clocks may differ by a few milliseconds, so a
-- later number could otherwise carry an earlier time, and the retention sweep (by time)
-- could remove it while keeping the event before it: a hole a feed reader cannot see.
-- Events already numbered take the latest time of the events up to them.
UPDATE events SET created_at = m.latest
FROM (
  SELECT id, max(created_at) OVER (PARTITION BY agency_id ORDER BY sequence ROWS UNBOUNDED PRECEDING) AS latest
  FROM events WHERE sequence IS NOT NULL
) AS m
WHERE events.id = m.id AND m.latest > events.created_at;
--> statement-breakpoint
UPDATE event_sequences SET last_created_at = (
  SELECT max(e.created_at) FROM events e WHERE e.agency_id = event_sequences.agency_id
);
--> statement-breakpoint
DROP TRIGGER events_sequence;
--> statement-breakpoint
CREATE TRIGGER events_sequence AFTER INSERT ON events BEGIN
  INSERT INTO event_sequences (agency_id, last, last_created_at) VALUES (new.agency_id, 1, new.created_at)
  ON CONFLICT (agency_id) DO UPDATE SET
    last = last + 1,
    last_created_at = max(coalesce(last_created_at, excluded.last_created_at), excluded.last_created_at);
  UPDATE events SET
    sequence = (SELECT last FROM event_sequences WHERE agency_id = new.agency_id),
    created_at = (SELECT last_created_at FROM event_sequences WHERE agency_id = new.agency_id)
  WHERE rowid = new.rowid;
END;
