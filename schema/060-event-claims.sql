-- Event claims in the events themselves: the claim of an event with a message_id is its own row,
-- so an event and its claim are committed (or lost to a crash) together. The rule, the in-memory
-- view and what a flush does: docs/architecture.md ("Claims: exactly once by message_id"),
-- src/claims/claims.ts, src/events/message-ids.ts.
--
-- message_key = MD5(org_id as text || ':' || message_id), 16 zero bytes without a message_id. The
-- service sends it (computed once per item); the DEFAULT computes the same for rows of parts
-- written before this column existed (read on the fly, nothing rewritten) and for any writer that
-- leaves it out. Random bytes: no codec.
ALTER TABLE events ADD COLUMN IF NOT EXISTS message_key FixedString(16)
    DEFAULT if(message_id = '', toFixedString('', 16), MD5(concat(toString(org_id), ':', message_id))) CODEC(NONE);

-- The claim rule needs every row's block number (the number of the INSERT's part, given at commit,
-- in commit order) through merges.
ALTER TABLE events MODIFY SETTING enable_block_number_column = 1;

-- The confirming lookup of a key the in-memory view may hold reads `events` by message_key within
-- the organization's last weeks. Whether a skip index on the key pays for its cost per INSERT is
-- measured in bench/ingest/README.md.

-- The narrow claim table of schema/010 and its view (the third view of every INSERT) are replaced
-- by the column above; the DEFAULT recomputes every claim they held from the events.
DROP VIEW IF EXISTS event_message_ids_mv;
DROP TABLE IF EXISTS event_message_ids;
