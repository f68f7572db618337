-- Numbers for the known users of the events stored before schema/230, and into their events.
-- Idempotent: a user with a valid claim gets no new one, and only rows still at 0 are updated, so
-- a second run (an interrupted first one, or `tallyhouse seed --events`, which runs these
-- statements after writing its rows) changes nothing that is right already. On a cluster each
-- node numbers the organizations of its shard between its local tables.
--
-- 1. Claims for the users without a valid one, numbered above the organization's highest number
--    in the order of their first event. One INSERT: one block, so all valid unless a writer raced
--    it (then the rule decides, and step 2 reads the rule's answer, not this statement's).
INSERT INTO event_user_numbers (org_id, user_id, num)
SELECT e.org_id, e.user_id, toUInt32(t.top + row_number() OVER (PARTITION BY e.org_id ORDER BY e.first_seen, e.user_id))
FROM (SELECT org_id, user_id, min(timestamp) AS first_seen FROM events WHERE anonymous = 0 AND user_num = 0 GROUP BY org_id, user_id) AS e
LEFT JOIN (SELECT org_id, max(num) AS top FROM event_user_numbers GROUP BY org_id) AS t ON t.org_id = e.org_id
WHERE (e.org_id, e.user_id) NOT IN (SELECT org_id, user_id FROM event_user_numbers WHERE (org_id, num, _block_number) IN (SELECT org_id, num, min(_block_number) FROM event_user_numbers GROUP BY org_id, num))
SETTINGS join_use_nulls = 0;

-- 2. Every user's valid number (the rule as one query), into a Join table for joinGet.
CREATE TABLE IF NOT EXISTS event_user_number_backfill (org_id UUID, user_id UUID, num UInt32) ENGINE = Join(ANY, LEFT, org_id, user_id);

INSERT INTO event_user_number_backfill
SELECT org_id, user_id, argMin(num, _block_number) FROM event_user_numbers
WHERE (org_id, num, _block_number) IN (SELECT org_id, num, min(_block_number) FROM event_user_numbers GROUP BY org_id, num)
GROUP BY org_id, user_id;

-- 3. The rows still at 0, synchronously (the Join table goes next). The mutation runs outside
--    this session: the Join table is named with its database (the runner fills `{database}`).
ALTER TABLE events UPDATE user_num = joinGet('{database}.event_user_number_backfill', 'num', org_id, user_id) WHERE anonymous = 0 AND user_num = 0 SETTINGS mutations_sync = 2;

DROP TABLE IF EXISTS event_user_number_backfill;
