-- The bytes an agency keeps in R2 count against it too: media_bytes is the declared size of
-- its uploads that are under way or completed (an expired or aborted upload's object is gone).
-- An upload whose size would take the agency past its quota is refused in its own statement.
INSERT INTO quota_defaults (resource, quota) VALUES ('media_bytes', 500000000000);
--> statement-breakpoint
INSERT INTO agency_usage (agency_id, resource, used)
SELECT agency_id, 'media_bytes', sum(size_bytes) FROM media_uploads
  WHERE status IN ('pending', 'completed') GROUP BY agency_id;
--> statement-breakpoint
CREATE TRIGGER media_bytes_quota BEFORE INSERT ON media_uploads
WHEN new.status IN ('pending', 'completed')
  AND coalesce((SELECT used FROM agency_usage WHERE agency_id = new.agency_id AND resource = 'media_bytes'), 0) + new.size_bytes > coalesce((SELECT quota FROM agency_quotas WHERE agency_id = new.agency_id AND resource = 'media_bytes'),
    (SELECT quota FROM quota_defaults WHERE resource = 'media_bytes'))
BEGIN
  SELECT RAISE(ABORT, 'agency_quota_exceeded:media_bytes');
END;
--> statement-breakpoint
CREATE TRIGGER media_bytes_usage_insert AFTER INSERT ON media_uploads
WHEN new.status IN ('pending', 'completed') BEGIN
  INSERT INTO agency_usage (agency_id, resource, used) VALUES (new.agency_id, 'media_bytes', new.size_bytes)
  ON CONFLICT (agency_id, resource) DO UPDATE SET used = used + excluded.used;
END;
--> statement-breakpoint
CREATE TRIGGER media_bytes_usage_settle AFTER UPDATE OF status ON media_uploads
WHEN old.status IN ('pending', 'completed') AND new.status NOT IN ('pending', 'completed') BEGIN
  UPDATE agency_usage SET used = used - old.size_bytes WHERE agency_id = old.agency_id AND resource = 'media_bytes';
END;
--> statement-breakpoint
CREATE TRIGGER media_bytes_usage_delete AFTER DELETE ON media_uploads
WHEN old.status IN ('pending', 'completed') BEGIN
  UPDATE agency_usage SET used = used - old.size_bytes WHERE agency_id = old.agency_id AND resource = 'media_bytes';
END;
