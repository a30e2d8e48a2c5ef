-- Backfill, then keep exact with triggers: tour_counts (tours per agency and status),
-- tour_search_grams (the address search index: the up-to-3 characters at every position
-- of lower(address)) and tour_search_gram_counts (tours per agency and gram). SQLite's
-- character functions stop at a NUL and instr does not, so an address holding a NUL also
-- gets the gram '' (every search checks those tours too).
INSERT INTO tour_counts (agency_id, status, tours)
SELECT agency_id, status, count(*) FROM tours GROUP BY agency_id, status;
--> statement-breakpoint
INSERT INTO tour_search_grams (agency_id, gram, tour_id)
SELECT DISTINCT t.agency_id, substr(lower(t.address), p.key + 1, 3), t.id
FROM tours AS t, json_each('[' || replace(hex(zeroblob(length(t.address))), '00', '0,') || '0]') AS p
WHERE p.key < length(t.address)
UNION
SELECT t.agency_id, '', t.id FROM tours AS t WHERE instr(t.address, char(0)) > 0;
--> statement-breakpoint
INSERT INTO tour_search_gram_counts (agency_id, gram, tours)
SELECT agency_id, gram, count(*) FROM tour_search_grams GROUP BY agency_id, gram;
--> statement-breakpoint
CREATE TRIGGER tours_count_insert AFTER INSERT ON tours BEGIN
  INSERT INTO tour_counts (agency_id, status, tours) VALUES (new.agency_id, new.status, 1)
  ON CONFLICT (agency_id, status) DO UPDATE SET tours = tours + 1;
END;
--> statement-breakpoint
CREATE TRIGGER tours_count_delete AFTER DELETE ON tours BEGIN
  UPDATE tour_counts SET tours = tours - 1 WHERE agency_id = old.agency_id AND status = old.status;
END;
--> statement-breakpoint
CREATE TRIGGER tours_count_update AFTER UPDATE OF agency_id, status ON tours
WHEN old.agency_id IS NOT new.agency_id OR old.status IS NOT new.status BEGIN
  UPDATE tour_counts SET tours = tours - 1 WHERE agency_id = old.agency_id AND status = old.status;
  INSERT INTO tour_counts (agency_id, status, tours) VALUES (new.agency_id, new.status, 1)
  ON CONFLICT (agency_id, status) DO UPDATE SET tours = tours + 1;
END;
--> statement-breakpoint
CREATE TRIGGER tours_search_insert AFTER INSERT ON tours BEGIN
  INSERT INTO tour_search_grams (agency_id, gram, tour_id)
  SELECT DISTINCT new.agency_id, substr(lower(new.address), p.key + 1, 3), new.id
  FROM json_each('[' || replace(hex(zeroblob(length(new.address))), '00', '0,') || '0]') AS p
  WHERE p.key < length(new.address)
  UNION
  SELECT new.agency_id, '', new.id WHERE instr(new.address, char(0)) > 0;
END;
--> statement-breakpoint
CREATE TRIGGER tours_search_delete AFTER DELETE ON tours BEGIN
  DELETE FROM tour_search_grams
  WHERE agency_id = old.agency_id AND tour_id = old.id AND gram IN (
    SELECT substr(lower(old.address), p.key + 1, 3)
    FROM json_each('[' || replace(hex(zeroblob(length(old.address))), '00', '0,') || '0]') AS p
    WHERE p.key < length(old.address)
    UNION ALL
    SELECT ''
  );
END;
--> statement-breakpoint
CREATE TRIGGER tours_search_update AFTER UPDATE OF agency_id, address ON tours
WHEN old.agency_id IS NOT new.agency_id OR old.address IS NOT new.address BEGIN
  DELETE FROM tour_search_grams
  WHERE agency_id = old.agency_id AND tour_id = old.id AND gram IN (
    SELECT substr(lower(old.address), p.key + 1, 3)
    FROM json_each('[' || replace(hex(zeroblob(length(old.address))), '00', '0,') || '0]') AS p
    WHERE p.key < length(old.address)
    UNION ALL
    SELECT ''
  );
  INSERT INTO tour_search_grams (agency_id, gram, tour_id)
  SELECT DISTINCT new.agency_id, substr(lower(new.address), p.key + 1, 3), new.id
  FROM json_each('[' || replace(hex(zeroblob(length(new.address))), '00', '0,') || '0]') AS p
  WHERE p.key < length(new.address)
  UNION
  SELECT new.agency_id, '', new.id WHERE instr(new.address, char(0)) > 0;
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_insert AFTER INSERT ON tour_search_grams BEGIN
  INSERT INTO tour_search_gram_counts (agency_id, gram, tours) VALUES (new.agency_id, new.gram, 1)
  ON CONFLICT (agency_id, gram) DO UPDATE SET tours = tours + 1;
END;
--> statement-breakpoint
CREATE TRIGGER tour_search_grams_delete AFTER DELETE ON tour_search_grams BEGIN
  UPDATE tour_search_gram_counts SET tours = tours - 1 WHERE agency_id = old.agency_id AND gram = old.gram;
  DELETE FROM tour_search_gram_counts WHERE agency_id = old.agency_id AND gram = old.gram AND tours <= 0;
END;
